"""Hand-made sessions and the compaction requests a projector would decide over them."""

from __future__ import annotations

from collections.abc import Sequence

from projections.compaction_window import CompactionWindow
from schemas.compaction_request import (
    CompactionRequest,
    CompactionTrigger,
    SummarySeed,
    compaction_request_id,
)
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.strategies import SESSION, TENANT, logged
from tests.unit.builders import call_event, response_event, text_event


def invocation(number: int, start: float) -> list[Event]:
    """Invocation `number`: a question, a call, its response and an answer, one second apart."""
    inv = f"inv{number}"
    return [
        text_event(f"q{number}", inv, start, f"question {number}?"),
        call_event(f"c{number}", inv, start + 1, f"call{number}", name="lookup"),
        response_event(f"r{number}", inv, start + 2, f"call{number}", name="lookup"),
        text_event(f"a{number}", inv, start + 3, f"answer {number}", author="agent"),
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
    """The request to summarize exactly `records` (in order), with `seed` first if given."""
    offsets = tuple(record.offset for record in records)
    events = [record.envelope.event for record in records]
    first = seed.timestamp if seed is not None else events[0].timestamp
    return CompactionRequest(
        request_id=compaction_request_id(SESSION, trigger, offsets),
        tenant=TENANT,
        session_key=SESSION,
        trigger=trigger,
        event_offsets=offsets,
        event_ids=tuple(event.id for event in events),
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
    chosen = [by_id[event.id] for event in window.summarized_events]
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
