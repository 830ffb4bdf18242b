"""A session projection as bytes and back, exactly: what a checkpoint of the state holds. Pure.

The encoding keeps each record once and every part refers to records by
offset: ``CS1``, a length-prefixed JSON document of every part but the records
and released ids, the released ids' 8-byte digests, then each record as offset,
length and its envelope as its topic carries it (layout: projections/README.md,
"Retention and checkpoints"). Decoding builds one record object per offset,
shared by every part that names it, as the folded projection does.

Example: ``decode_state(encode_state(p)) == p`` for every projection the fold
makes, released (:mod:`projections.retention.log_retention`) or not.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import orjson
from pyrsistent import PMap, PVector, pmap, pset, pvector

from projections.compaction.gate_memo import GateBound, GateMemo
from projections.compaction.in_flight import InFlightRequest
from projections.compaction.live_order import LiveOrder
from projections.compaction.masking import summary_range
from projections.compaction.summary_chain import SummaryChain, summary_chain
from projections.compaction.summary_ledger import SummaryLedger
from projections.contents.assembly import ContentsRequest
from projections.contents.context_view import ContextView, rebuild_view
from projections.contents.next_agent import NextAgentTrail, agent_to_run, trail_of
from projections.fold.conditions import Conditions
from projections.fold.invocations import InvocationCounts
from projections.fold.projection import SessionProjection
from projections.fold.scoped_state import ScopedState
from projections.fold.session_log import SessionLog, stored_events
from projections.fold.token_usage import TokenTally
from projections.retention.released_ids import ReleasedIds
from projections.retention.retained_vector import RetainedVector
from schemas.codec import encode
from schemas.envelope import Envelope
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent

MARK: Final = b"CS1"
_LENGTH: Final = struct.Struct(">I")
_RECORD_HEAD: Final = struct.Struct(">qI")

Json = dict[str, Any]


class StateDecodeError(ValueError):
    """The bytes are not a projection this codec wrote."""


def encode_state(projection: SessionProjection) -> bytes:
    """The projection's bytes. O(what it holds)."""
    records: dict[int, LoggedEvent] = {}
    document = {
        "session_key": projection.session_key,
        "last_offset": projection.last_offset,
        "log": _log(projection.log, records),
        "state": [dict(part) for part in _scopes(projection.state)],
        "invocations": _invocations(projection.invocations),
        "tokens": [
            projection.tokens.last_prompt_tokens,
            projection.tokens.total_prompt_tokens,
            projection.tokens.total_candidates_tokens,
        ],
        "summaries": {
            "survivors": _refs(_stream_order(projection.summaries.survivors), records),
            "request_ids": dict(projection.summaries.request_ids),
        },
        "in_flight": _in_flight(projection.in_flight),
        "refused": sorted(projection.refused_requests),
        "gate_memo": _gate_memo(projection.gate_memo),
        "next_agent": _next_agent(projection.next_agent),
        "view": _view(projection.view, records),
    }
    if projection.estimate_view is not None:
        document["estimate_view"] = _view(projection.estimate_view, records)
    origins = {
        str(offset): record.origin_offset
        for offset, record in records.items()
        if record.origin_offset is not None
    }
    if origins:  # records a fork inherited: where each is on its own session's partition
        document["origins"] = origins
    if projection.forked_at is not None:
        document["forked_at"] = projection.forked_at
    if projection.deleted_at is not None:
        document["deleted_at"] = projection.deleted_at
    if projection.retired_requests:
        document["retired"] = sorted(projection.retired_requests)
    if projection.conditions != Conditions():
        conditions = projection.conditions
        document["conditions"] = [
            conditions.writer_offset,
            list(conditions.refused),
            conditions.refused_floor,
        ]
    body = orjson.dumps(document)
    ids = projection.log.released.to_bytes()
    parts = [MARK, _LENGTH.pack(len(body)), body, _LENGTH.pack(len(ids)), ids]
    for offset in sorted(records):
        raw = encode(records[offset].envelope)
        parts.append(_RECORD_HEAD.pack(offset, len(raw)))
        parts.append(raw)
    return b"".join(parts)


def decode_state(raw: bytes) -> SessionProjection:
    """The projection :func:`encode_state` wrote.

    Raises:
        StateDecodeError: `raw` is not such bytes.
    """
    if not raw.startswith(MARK) or len(raw) < len(MARK) + _LENGTH.size:
        raise StateDecodeError("not a projection state: its mark is missing")
    (length,) = _LENGTH.unpack_from(raw, len(MARK))
    start = len(MARK) + _LENGTH.size
    try:
        document = orjson.loads(raw[start : start + length])
        (ids_length,) = _LENGTH.unpack_from(raw, start + length)
        ids_start = start + length + _LENGTH.size
        released = ReleasedIds.from_bytes(raw[ids_start : ids_start + ids_length])
        origins = {int(offset): Offset(at) for offset, at in document.get("origins", {}).items()}
        records = dict(_records(raw, ids_start + ids_length, origins))
        return _projection(document, records, released)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, struct.error) as exc:
        raise StateDecodeError(f"projection state unreadable: {exc}") from exc


# -- encoding --------------------------------------------------------------------------------


def _float(value: float) -> float | str:
    return value if math.isfinite(value) else repr(value)


def _refs(held: Iterable[LoggedEvent], records: dict[int, LoggedEvent]) -> list[int]:
    offsets: list[int] = []
    for record in held:
        records[record.offset] = record
        offsets.append(record.offset)
    return offsets


def _stream_order(chain: SummaryChain[LoggedEvent]) -> list[LoggedEvent]:
    return sorted(chain, key=lambda record: record.offset)


def _vector(vector: RetainedVector[Any], items: list[Any]) -> Json:
    return {"first": vector.first, "items": items}


def _log(log: SessionLog, records: dict[int, LoggedEvent]) -> Json:
    order = log.order
    return {
        "records": _vector(log.records, _refs(log.records.tail, records)),
        "live": _vector(log.live, _refs(log.live.tail, records)),
        "sizes": _vector(log.sizes, list(log.sizes.tail)),
        "live_sizes": _vector(log.live_sizes, list(log.live_sizes.tail)),
        "first_positions": dict(log.first_positions),
        "order": [
            order.ordered,
            order.length,
            _float(order.last_timestamp),
            order.last_invocation,
            dict(order.invocations),
            order.last_summary_position,
            _float(order.last_summary_end),
            dict(order.call_positions),
        ],
    }


def _scopes(state: ScopedState) -> tuple[PMap[str, Any], ...]:
    return state.app, state.user, state.session


def _invocations(counts: InvocationCounts) -> Json:
    return {
        "ids": sorted(counts.invocation_ids),
        "latest": {key: _float(value) for key, value in counts.latest_timestamps.items()},
        "previous_end": _float(counts.previous_end),
        "new": sorted(counts.new_invocations),
        "released": counts.released,
    }


def _in_flight(request: InFlightRequest | None) -> Json | None:
    if request is None:
        return None
    return {
        "request_id": request.request_id,
        "trigger": request.trigger,
        "start_offset": request.start_offset,
        "end_offset": request.end_offset,
        "decided_at_offset": request.decided_at_offset,
        "attempt": request.attempt,
    }


def _bound(bound: GateBound | None) -> list[Any] | None:
    return None if bound is None else [_float(bound.floor), bound.budget]


def _gate_memo(memo: GateMemo | None) -> Json | None:
    if memo is None:
        return None
    return {
        "token": _bound(memo.token),
        "sliding": _bound(memo.sliding),
        "overlap_size": memo.overlap_size,
    }


def _next_agent(trail: NextAgentTrail) -> Json:
    return {
        "root": trail.root,
        "calls": dict(trail.call_authors),
        "answered": trail.answered,
        "replier": trail.replier,
        "sealed": trail.sealed,
    }


def _view(view: ContextView, records: dict[int, LoggedEvent]) -> Json:
    request = view.request
    return {
        "request": [
            request.agent_name,
            request.current_branch,
            request.include_contents,
            request.preserve_function_call_ids,
            request.include_thoughts_from_other_agents,
            request.isolation_scope,
        ],
        "call_ids": sorted(view.call_ids),
        "awaited": sorted(view.awaited_call_ids),
        "summaries": _refs(_stream_order(view.summaries), records),
        "coverage": [
            [_float(x) for x in view.coverage.starts],
            [_float(x) for x in view.coverage.ends],
        ],
        "raw": _refs(view.raw, records),
        "covered_tools": {key: _refs(held, records) for key, held in view.covered_tools.items()},
    }


# -- decoding --------------------------------------------------------------------------------


def _unfloat(value: float | str) -> float:
    return float(value)


def _records(
    raw: bytes, position: int, origins: Mapping[int, Offset]
) -> Iterator[tuple[int, LoggedEvent]]:
    view = memoryview(raw)
    while position < len(raw):
        offset, length = _RECORD_HEAD.unpack_from(view, position)
        position += _RECORD_HEAD.size
        envelope = Envelope.model_validate_json(bytes(view[position : position + length]))
        position += length
        yield offset, LoggedEvent(Offset(offset), envelope, origins.get(offset))


def _held(offsets: Sequence[int], records: Mapping[int, LoggedEvent]) -> PVector[LoggedEvent]:
    return pvector(records[offset] for offset in offsets)


def _chain(offsets: Sequence[int], records: Mapping[int, LoggedEvent]) -> SummaryChain[LoggedEvent]:
    """The chain of the survivors at `offsets` (stream order): the coverage is theirs."""
    held = [records[offset] for offset in offsets]
    return summary_chain([(record, *summary_range(record.envelope.event)) for record in held])


def _retained(data: Json, items: PVector[Any]) -> RetainedVector[Any]:
    return RetainedVector(items, int(data["first"]))


def _projection(
    document: Json, records: Mapping[int, LoggedEvent], released: ReleasedIds
) -> SessionProjection:
    log = document["log"]
    order = log["order"]
    tokens = document["tokens"]
    summaries = document["summaries"]
    invocations = document["invocations"]
    app, user, session = document["state"]
    held_records = _held(log["records"]["items"], records)
    projection = SessionProjection(
        session_key=SessionKey(document["session_key"]),
        last_offset=Offset(document["last_offset"]),
        log=SessionLog(
            records=_retained(log["records"], held_records),
            live=_retained(log["live"], _held(log["live"]["items"], records)),
            first_positions=pmap(log["first_positions"]),
            stored_by_id=stored_events(held_records),
            sizes=_retained(log["sizes"], pvector(log["sizes"]["items"])),
            live_sizes=_retained(log["live_sizes"], pvector(log["live_sizes"]["items"])),
            order=LiveOrder(
                order[0],
                order[1],
                _unfloat(order[2]),
                order[3],
                pmap(order[4]),
                order[5],
                _unfloat(order[6]),
                pmap(order[7]),
            ),
            released=released,
        ),
        state=ScopedState(pmap(app), pmap(user), pmap(session)),
        invocations=InvocationCounts(
            invocation_ids=pset(invocations["ids"]),
            flushed=pmap({key: _unfloat(value) for key, value in invocations["latest"].items()}),
            previous_end=_unfloat(invocations["previous_end"]),
            new_invocations=pset(invocations["new"]),
            released=invocations["released"],
        ),
        tokens=TokenTally(tokens[0], tokens[1], tokens[2]),
        summaries=SummaryLedger(
            survivors=_chain(summaries["survivors"], records),
            request_ids=pmap(
                {key: Offset(offset) for key, offset in summaries["request_ids"].items()}
            ),
        ),
        in_flight=_in_flight_of(document["in_flight"]),
        refused_requests=pset(document["refused"]),
        gate_memo=_gate_memo_of(document["gate_memo"]),
        view=_view_of(document["view"], records, released),
        estimate_view=(
            _view_of(document["estimate_view"], records, released)
            if "estimate_view" in document
            else None
        ),
        forked_at=None if document.get("forked_at") is None else Offset(document["forked_at"]),
        deleted_at=None if document.get("deleted_at") is None else Offset(document["deleted_at"]),
        retired_requests=pset(document.get("retired", ())),
        conditions=_conditions_of(document.get("conditions")),
    )
    trail = document.get("next_agent")
    if trail is None:  # written before the view followed the next agent
        return _following_next_agent(projection)
    return replace(projection, next_agent=_next_agent_of(trail))


def _conditions_of(data: list[Any] | None) -> Conditions:
    if data is None:  # none written: no writer record, nothing refused (or an older checkpoint)
        return Conditions()
    writer, refused, floor = data
    return Conditions(Offset(writer), tuple(Offset(offset) for offset in refused), Offset(floor))


def _next_agent_of(data: Json) -> NextAgentTrail:
    return NextAgentTrail(
        data["root"], pmap(data["calls"]), data["answered"], data["replier"], data["sealed"]
    )


def _following_next_agent(projection: SessionProjection) -> SessionProjection:
    """A projection stored with a view for the configured root, its view now for the next agent.

    Raises:
        NeedsHistory: The live records it needs were released (rebuild from the log).
    """
    live = projection.log.live
    request = projection.view.request
    trail = trail_of(request.agent_name, (record.envelope.event for record in live))
    agent = agent_to_run(trail)
    view = projection.view
    if agent != request.agent_name:
        view = rebuild_view(replace(request, agent_name=agent), live)
    return replace(projection, next_agent=trail, view=view)


def _in_flight_of(data: Json | None) -> InFlightRequest | None:
    if data is None:
        return None
    return InFlightRequest(
        data["request_id"],
        data["trigger"],
        Offset(data["start_offset"]),
        Offset(data["end_offset"]),
        Offset(data["decided_at_offset"]),
        data["attempt"],
    )


def _bound_of(data: list[Any] | None) -> GateBound | None:
    return None if data is None else GateBound(_unfloat(data[0]), data[1])


def _gate_memo_of(data: Json | None) -> GateMemo | None:
    if data is None:
        return None
    return GateMemo(_bound_of(data["token"]), _bound_of(data["sliding"]), data["overlap_size"])


def _view_of(data: Json, records: Mapping[int, LoggedEvent], released: ReleasedIds) -> ContextView:
    request = data["request"]
    return ContextView(
        request=ContentsRequest(
            agent_name=request[0],
            current_branch=request[1],
            include_contents=request[2],
            preserve_function_call_ids=request[3],
            include_thoughts_from_other_agents=request[4],
            isolation_scope=request[5],
        ),
        call_ids=pset(data["call_ids"]),
        awaited_call_ids=pset(data["awaited"]),
        summaries=_chain(data["summaries"], records),
        raw=_held(data["raw"], records),
        covered_tools=pmap(
            {key: _held(offsets, records) for key, offsets in data["covered_tools"].items()}
        ),
        released=released,
    )
