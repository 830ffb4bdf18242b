"""The tests' one vocabulary of records: events, envelopes, logged events, session keys.

Every builder returns a validated schema object (:class:`~schemas.event.Event`,
:class:`~schemas.envelope.Envelope`, :class:`~schemas.logged_event.LoggedEvent`,
:class:`~schemas.compaction_request.CompactionRequest`). Argument orders are
the same everywhere:

* an event is ``(event_id, ..., timestamp, ...)``: :func:`event` takes the
  author and a list of parts (built with :func:`text`, :func:`thought`,
  :func:`call`, :func:`resp`); the shorthands :func:`text_event`,
  :func:`call_event`, :func:`response_event` and :func:`bare_event` take the
  invocation id second;
* a record of a session is ``(key, event)``: the session key first, as on the
  topic, then what it carries (:func:`envelope`, :func:`logged_event`);
  :func:`logged` puts several events of one session at given offsets.

Parts are written in the wire's camelCase (``functionCall``,
``functionResponse``); extra event fields may use either spelling, as the
schema accepts both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from projections.compaction.summary_request import refusal_event
from projections.compaction.window import CompactionWindow
from schemas.compaction_request import (
    CompactionRequest,
    CompactionTrigger,
    SummarySeed,
    compaction_request_id,
)
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey, TenantId, parse_session_key
from schemas.logged_event import LoggedEvent
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_envelope import summary_envelope

Json = dict[str, Any]

TENANT: Final = TenantId("acme")
"""The tenant of :data:`SESSION`."""
SESSION: Final = SessionKey("acme/support/u1/s1")
"""The session hand-written and generated single-session tests use."""
PRODUCER: Final = "agent-runner"
"""The producer of events an agent runner appends."""


# -- session keys ------------------------------------------------------------


def session_key(number: int) -> SessionKey:
    """The key of numbered session `number`: three tenants in turn, one user per session."""
    return SessionKey(f"tenant{number % 3}/support/u{number}/s{number}")


def tenant_of(key: SessionKey) -> TenantId:
    """The tenant a session key names."""
    return TenantId(parse_session_key(key).tenant)


# -- parts -------------------------------------------------------------------


def text(value: str, **fields: Any) -> Json:
    """A text part."""
    return {"text": value, **fields}


def thought(value: str) -> Json:
    """A thought part (text the model marked as thinking)."""
    return {"text": value, "thought": True}


def call(call_id: str | None, name: str = "tool", args: Json | None = None) -> Json:
    """A function-call part; no ``id`` when `call_id` is None."""
    body: Json = {"name": name, "args": {} if args is None else args}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def resp(call_id: str | None, name: str = "tool", response: Json | None = None) -> Json:
    """A function-response part answering `call_id`; no ``id`` when it is None."""
    body: Json = {"name": name, "response": {"ok": 1} if response is None else response}
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


# -- events ------------------------------------------------------------------


def event(
    event_id: str,
    author: str,
    timestamp: float,
    parts: Sequence[Json] | None = None,
    *,
    role: str | None = None,
    inv: str = "inv1",
    **fields: Any,
) -> Event:
    """An event with `parts` as content (none when None); role user for "user", model else.

    An ``invocation_id`` among `fields` replaces `inv`.
    """
    inv = fields.pop("invocation_id", inv)
    data: Json = {"id": event_id, "invocationId": inv, "author": author, "timestamp": timestamp}
    if parts is not None:
        data["content"] = {
            "role": role or ("user" if author == "user" else "model"),
            "parts": list(parts),
        }
    data.update(fields)
    return Event.model_validate(data)


def text_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    text: str = "x",
    *,
    author: str = "user",
    **fields: Any,
) -> Event:
    """A one-text event of `invocation_id`; role follows the author (user or model)."""
    return event(event_id, author, timestamp, [{"text": text}], inv=invocation_id, **fields)


def call_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    call_id: str,
    name: str = "tool",
    **fields: Any,
) -> Event:
    """A model event with one function call, of author ``agent`` unless `fields` say."""
    author = fields.pop("author", "agent")
    return event(event_id, author, timestamp, [call(call_id, name)], inv=invocation_id, **fields)


def response_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    call_id: str,
    name: str = "tool",
    **fields: Any,
) -> Event:
    """A tool result answering `call_id` with ``{"ok": 1}``, of author ``agent`` unless told."""
    parts = [resp(call_id, name)]
    author = fields.pop("author", "agent")
    return event(event_id, author, timestamp, parts, role="user", inv=invocation_id, **fields)


def parts_event(
    event_id: str, invocation_id: str, timestamp: float, parts: Sequence[Json], **fields: Any
) -> Event:
    """A model content of `parts`, of author ``agent`` unless `fields` say."""
    author = fields.pop("author", "agent")
    return event(event_id, author, timestamp, parts, role="model", inv=invocation_id, **fields)


def bare_event(event_id: str, invocation_id: str, timestamp: float, **fields: Any) -> Event:
    """An event with only the given fields, of author ``agent`` unless they say."""
    return event(event_id, fields.pop("author", "agent"), timestamp, inv=invocation_id, **fields)


def summary_event(
    event_id: str, start: float, end: float, timestamp: float, text: str = "sum", **fields: Any
) -> Event:
    """A summary of [`start`, `end`] shaped like ADK's: author user, no content.

    A NaN or infinite bound is set after validation: the schema refuses
    non-finite numbers, so none comes through the codec, but the core still
    treats them as ADK does and its tests build them.
    """
    finite = math.isfinite(start) and math.isfinite(end)
    compaction: Json = {
        "start_timestamp": start if finite else 0.0,
        "end_timestamp": end if finite else 0.0,
        "compacted_content": {"role": "model", "parts": [{"text": text}]},
    }
    fields.setdefault("invocation_id", f"cmp-{event_id}")
    author = fields.pop("author", "user")
    built = event(event_id, author, timestamp, actions={"compaction": compaction}, **fields)
    stored = built.actions.compaction
    if finite or stored is None:
        return built
    bounds = {"start_timestamp": start, "end_timestamp": end}
    actions = built.actions.model_copy(update={"compaction": stored.model_copy(update=bounds)})
    return built.model_copy(update={"actions": actions})


def seeded_token_example() -> list[Event]:
    """The worked example of reference §5.6: e1, e2, summary P [100, 101], e4..e7, e7 counts 100.

    e7 reports 100 prompt tokens; with token_threshold 50 and event_retention_size 2,
    ADK summarizes e4 and e5 with P rolled in as the seed.
    """
    return [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        summary_event("p", 100.0, 101.0, 102.0, "the summary P"),
        text_event("e4", "i2", 103),
        text_event("e5", "i2", 104, author="agent"),
        text_event("e6", "i3", 105),
        text_event("e7", "i3", 106, author="agent", usage_metadata={"prompt_token_count": 100}),
    ]


def rewind_event(event_id: str, target: str, timestamp: float) -> Event:
    """A rewind annulling invocation `target` and what follows it."""
    return event(
        event_id,
        "user",
        timestamp,
        inv=f"rw-{event_id}",
        actions={"rewind_before_invocation_id": target},
    )


def ids(events: Sequence[Event]) -> list[str]:
    """The ids of `events`, in order."""
    return [each.id for each in events]


# -- records of a session ----------------------------------------------------


def envelope(
    key: SessionKey,
    event: Event | Json,
    *,
    producer_id: str = PRODUCER,
    idempotency_key: str | None = None,
) -> Envelope:
    """`event` as a record of session `key`; idempotency key ``<key>/<event id>`` by default."""
    parsed = event if isinstance(event, Event) else Event.model_validate(event)
    return Envelope(
        tenant=tenant_of(key),
        session_key=key,
        producer_id=producer_id,
        idempotency_key=f"{key}/{parsed.id}" if idempotency_key is None else idempotency_key,
        event=parsed,
    )


def logged_event(key: SessionKey, event: Event, offset: int) -> LoggedEvent:
    """`event` of session `key` read back at `offset`."""
    return LoggedEvent(Offset(offset), envelope(key, event))


def logged(
    events: Sequence[Event], offsets: Sequence[int], key: SessionKey = SESSION
) -> list[LoggedEvent]:
    """`events` of session `key` (:data:`SESSION` by default) read back at `offsets`."""
    return [logged_event(key, each, offset) for each, offset in zip(events, offsets, strict=True)]


# -- hand-made sessions and their compaction requests --------------------------


def invocation(number: int, start: float) -> list[Event]:
    """Invocation `number`: a question, a call, its response and an answer, one second apart."""
    inv = f"inv{number}"
    return [
        text_event(f"q{number}", inv, start, f"question {number}?"),
        call_event(f"c{number}", inv, start + 1, f"call{number}", name="lookup"),
        response_event(f"r{number}", inv, start + 2, f"call{number}", name="lookup"),
        text_event(f"a{number}", inv, start + 3, f"answer {number}", author="agent"),
    ]


def exchange(number: int, timestamp: float, answer: str = "x", **fields: Any) -> list[Event]:
    """Invocation `number` as a question ``q<n>`` and the agent's answer ``a<n>`` a second later."""
    inv = f"inv{number}"
    return [
        text_event(f"q{number}", inv, timestamp, **fields),
        text_event(f"a{number}", inv, timestamp + 1, answer, author="agent", **fields),
    ]


def session(invocations: int, *, first_offset: int = 10, step: int = 2) -> list[LoggedEvent]:
    """`invocations` invocations at offsets `first_offset`, +`step`, ... (gaps: other sessions)."""
    events = [e for n in range(invocations) for e in invocation(n, 100.0 + 10 * n)]
    return logged(events, [first_offset + step * i for i in range(len(events))])


def request_for(
    records: Sequence[LoggedEvent],
    *,
    seed: SummarySeed | None = None,
    trigger: CompactionTrigger = "sliding_window",
    attempt: int = 1,
) -> CompactionRequest:
    """The request to summarize exactly `records` of :data:`SESSION`, `seed` first if given."""
    offsets = tuple(record.offset for record in records)
    events = [record.envelope.event for record in records]
    first = seed.timestamp if seed is not None else events[0].timestamp
    return CompactionRequest(
        request_id=compaction_request_id(SESSION, trigger, offsets),
        tenant=TENANT,
        session_key=SESSION,
        trigger=trigger,
        event_offsets=offsets,
        event_ids=tuple(each.id for each in events),
        start_timestamp=first,
        end_timestamp=events[-1].timestamp,
        seed=seed,
        decided_at_offset=offsets[-1],
        attempt=attempt,
    )


def request_of_window(
    window: CompactionWindow, records: Sequence[LoggedEvent]
) -> CompactionRequest:
    """The request for a window the core chose over `records`."""
    by_id = {record.envelope.event.id: record for record in records}
    chosen = [by_id[each.id] for each in window.summarized_events]
    seed = None
    if window.seed is not None and window.seed.content is not None:
        seed = SummarySeed(
            timestamp=window.seed.timestamp,
            author=window.seed.author,
            branch=window.seed.branch,
            content=window.seed.content,
        )
    request = request_for(chosen, seed=seed, trigger=window.trigger)
    return request.model_copy(update={"decided_at_offset": Offset(records[-1].offset)})


def request_with(**changes: object) -> CompactionRequest:
    """A request for a one-invocation session with `changes`, unchecked (as a forged record)."""
    return request_for(session(1)).model_copy(update=changes)


# -- the pipeline's answers to a request ----------------------------------------


def answer_envelope(request: CompactionRequest, serial: int, timestamp: float) -> Envelope:
    """The summary the summarizer worker appends to answer `request`."""
    range_ends = (
        Event(author="user", timestamp=request.start_timestamp),
        Event(author="user", timestamp=request.end_timestamp),
    )
    return summary_envelope(
        request,
        range_ends,
        SummaryResult(text=f"summary {serial} of {len(request.event_offsets)} events"),
        producer_id="summarizer",
        event_id=f"summary-{serial}",
        invocation_id=f"cmp-summary-{serial}",
        timestamp=timestamp,
    )


def refusal_envelope(request: CompactionRequest, serial: int, timestamp: float) -> Envelope:
    """The refusal the pipeline appends when it gives `request` up."""
    refusal = refusal_event(
        request.request_id, "gave up", event_id=f"refusal-{serial}", timestamp=timestamp
    )
    return envelope(
        request.session_key,
        refusal,
        producer_id="projector",
        idempotency_key=f"refusal:{request.request_id}",
    )
