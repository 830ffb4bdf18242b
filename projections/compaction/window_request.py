"""The compaction request that carries a chosen window. Pure: no I/O, no clock.

A window holds the very event objects of the projection's live records, so
the request names them by offset (an inherited event also by where it is on
its own partition), rolls the previous summary in as its seed, and is
refused (None) when no record could carry it. Its id is
:func:`~schemas.compaction_request.compaction_request_id` of the session, the
trigger and the offsets, so the same log always yields the same requests.

Example: ``sliding_window`` over live offsets 0..3 of ``acme/app/u/s``,
decided at offset 4 -> ``CompactionRequest(event_offsets=(0, 1, 2, 3),
decided_at_offset=4, ...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from projections.compaction.rolling_seed import carried_seed
from projections.compaction.window import CompactionWindow
from projections.fold.projection import SessionProjection
from schemas.codec import MAX_RECORD_BYTES, encode
from schemas.compaction_request import (
    CompactionRequest,
    InheritedEvent,
    compaction_request_id,
    seed_problem,
)
from schemas.keys import Offset, parse_session_key
from schemas.logged_event import LoggedEvent

SEED_INVOCATION_ID: Final = "ctxstream-seed"
"""Invocation id of the synthetic seed event; the request carries the seed without it."""


def compaction_request(
    projection: SessionProjection,
    window: CompactionWindow,
    *,
    decided_at_offset: Offset,
    start: int = 0,
) -> CompactionRequest | None:
    """The request to summarize `window`, chosen from the live events of `projection`.

    The window holds the very event objects of the projection's live records
    from position `start` on, so their offsets are found by identity.
    O(live events from `start`).

    None when no request can carry the window: its seed (the previous
    summary, rolled in) is beyond what a request may carry
    (:func:`schemas.compaction_request.seed_problem`), or the encoded request
    is over one record (:data:`schemas.codec.MAX_RECORD_BYTES`: a seed of
    large inline data, thousands of events with the longest ids). Only a
    summary the tenant wrote itself can be that long, since the summarizer
    clips its own, and no record could hold the request. That trigger then
    decides nothing, as if the window were not worth compacting, and the
    session folds on; ADK, which has no such bound, would summarize it.
    O(window) more when a request is decided: it is encoded once to measure it.

    Raises:
        ValueError: an event of the window is not a live event of `projection` (a bug).
    """
    records: Mapping[int, LoggedEvent] = {
        id(record.envelope.event): record for record in projection.log.live[start:]
    }
    try:
        window_records = [records[id(event)] for event in window.summarized_events]
    except KeyError as exc:
        raise ValueError("a window event is not a live event of the projection") from exc
    event_offsets = tuple(record.offset for record in window_records)
    inherited = tuple(
        InheritedEvent(
            offset=record.offset,
            session_key=record.envelope.session_key,
            origin_offset=record.origin_offset,
        )
        for record in window_records
        if record.origin_offset is not None
    )
    seed = window.seed
    if seed is not None and seed.content is not None and seed_problem(seed.content) is not None:
        return None
    request = CompactionRequest(
        request_id=compaction_request_id(projection.session_key, window.trigger, event_offsets),
        tenant=parse_session_key(projection.session_key).tenant,
        session_key=projection.session_key,
        trigger=window.trigger,
        event_offsets=event_offsets,
        event_ids=window.event_ids,
        start_timestamp=window.start_timestamp,
        end_timestamp=window.end_timestamp,
        seed=None if seed is None else carried_seed(seed),
        decided_at_offset=decided_at_offset,
        inherited=inherited,
        fork_offset=projection.forked_at if inherited else None,
    )
    return request if len(encode(request)) <= MAX_RECORD_BYTES else None
