"""Whether a request still needs its summary, from its session's slice (request_status)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import assume, given, settings

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.summary_request import refusal_event, with_summary_request_id
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import RangeNotFoundError, RangeNotStableError
from summarizer_worker.request_status import (
    AlreadyRefused,
    AlreadySummarized,
    Summarize,
    Superseded,
    request_status,
)
from tests.support.events import (
    invocation,
    logged,
    request_for,
    request_of_window,
    rewind_event,
    session,
    summary_event,
    text_event,
)
from tests.support.strategies import sessions


def _after(log: Sequence[LoggedEvent], *events: Event, step: int = 2) -> list[LoggedEvent]:
    """`log` with `events` appended at the following offsets."""
    first = log[-1].offset + step
    return [*log, *logged(list(events), [first + step * i for i in range(len(events))])]


def _stable(log: Sequence[LoggedEvent]) -> Offset:
    return Offset(log[-1].offset + 1)


def test_a_fresh_request_is_summarized_with_its_window() -> None:
    log = session(3)
    request = request_for(log[:8])
    status = request_status(request, log, _stable(log))
    assert isinstance(status, Summarize)
    assert [e.id for e in status.window] == ["q0", "c0", "r0", "a0", "q1", "c1", "r1", "a1"]


def test_a_summary_naming_the_request_after_the_range_answers_it() -> None:
    log = session(2)
    request = request_for(log[:4])
    summary = with_summary_request_id(summary_event("s", 100.0, 103.0, 200.0), request.request_id)
    log = _after(log, summary)
    assert request_status(request, log, _stable(log)) == AlreadySummarized(log[-1].offset)


def test_a_summary_of_another_request_does_not_answer_it() -> None:
    log = session(2)
    request = request_for(log[:4])
    other = with_summary_request_id(summary_event("s", 100.0, 101.0, 200.0), "another")
    log = _after(log, other)
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


def test_an_answering_summary_that_a_rewind_annulled_does_not_count() -> None:
    log = session(2)
    request = request_for(log[:4])
    summary = with_summary_request_id(summary_event("s", 100.0, 103.0, 200.0), request.request_id)
    # inv1 is rewound together with the summary appended inside it.
    rest = [record.envelope.event for record in log[6:]]
    log = _after(log[:6], summary, *rest, rewind_event("w", "inv1", 300.0))
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


def test_a_refusal_naming_the_request_after_the_range_drops_it() -> None:
    log = session(2)
    request = request_for(log[:4])
    refusal = refusal_event(request.request_id, "read: too large", event_id="f", timestamp=200.0)
    log = _after(log, refusal)
    # Answered already: the worker writes nothing more (a withdrawal would be a second refusal).
    assert request_status(request, log, _stable(log)) == AlreadyRefused(log[-1].offset)


def test_a_refusal_of_another_request_does_not_drop_it() -> None:
    log = session(2)
    request = request_for(log[:4])
    log = _after(log, refusal_event("another", "check", event_id="f", timestamp=200.0))
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


def test_a_later_summary_containing_the_range_supersedes_it() -> None:
    log = session(2)
    request = request_for(log[4:8])
    log = _after(log, summary_event("s", 100.0, 113.0, 200.0))
    status = request_status(request, log, _stable(log))
    assert status == Superseded(f"covered by the summary at offset {log[-1].offset}")


def test_a_later_summary_overlapping_part_of_the_range_does_not() -> None:
    log = session(2)
    request = request_for(log[:8])
    log = _after(log, summary_event("s", 100.0, 105.0, 200.0))
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


@pytest.mark.parametrize("target", ["inv0", "inv1"])
def test_a_rewind_into_the_range_supersedes_it(target: str) -> None:
    log = session(2)
    request = request_for(log)
    log = _after(log, rewind_event("w", target, 300.0))
    status = request_status(request, log, _stable(log))
    assert isinstance(status, Superseded)
    assert status.reason.startswith("rewound")


def test_a_rewind_to_an_invocation_before_the_slice_supersedes_it() -> None:
    log = session(2)
    request = request_for(log[4:])
    log = _after(log[4:], rewind_event("w", "inv-before", 300.0))
    assert isinstance(request_status(request, log, _stable(log)), Superseded)


def test_a_rewind_of_an_invocation_after_the_range_leaves_it() -> None:
    log = session(1)
    request = request_for(log)
    log = _after(log, *invocation(1, 200.0), rewind_event("w", "inv1", 300.0))
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


def test_a_rewind_inside_the_range_was_known_and_is_left_alone() -> None:
    # The projector chose the window after this rewind to an unknown invocation.
    log = session(1)
    log = _after(log, rewind_event("w", "gone", 150.0), text_event("q9", "inv9", 160.0))
    request = request_for([*log[:4], log[-1]])
    assert isinstance(request_status(request, log, _stable(log)), Summarize)


def test_a_range_at_or_past_the_last_stable_offset_is_not_stable() -> None:
    log = session(1)
    request = request_for(log)
    with pytest.raises(RangeNotStableError) as caught:
        request_status(request, log[:-1], log[-1].offset)
    assert caught.value.retriable
    assert caught.value.stable_offset == log[-1].offset


def test_a_slice_without_the_requested_events_is_a_range_not_found() -> None:
    log = session(1)
    request = request_for(log)
    with pytest.raises(RangeNotFoundError):
        request_status(request, log[1:], _stable(log))


CONFIG = CompactionConfig(compaction_interval=2, overlap_size=1)


@settings(max_examples=60, deadline=None)
@given(sessions(max_invocations=5))
def test_a_window_the_core_chooses_is_read_back_as_chosen(log: list[LoggedEvent]) -> None:
    # The slice as the worker reads it right after the decision: nothing after the range.
    events = [record.envelope.event for record in log]
    window = select_post_invocation_window(events, CONFIG)
    assume(window is not None)
    assert window is not None
    request = request_of_window(window, log)
    read = [r for r in log if request.start_offset <= r.offset <= request.end_offset]
    status = request_status(request, read, Offset(request.end_offset + 1))
    assert status == Summarize(window.events)
