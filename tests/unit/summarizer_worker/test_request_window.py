"""Rebuilding a request's window from the records read back (request_window)."""

from __future__ import annotations

import pytest

from projections.compaction.rolling_seed import seed_event
from schemas.compaction_request import SummarySeed
from schemas.event import Content, Part
from schemas.keys import Offset
from summarizer_worker.errors import RangeNotFoundError
from summarizer_worker.request_window import request_window
from tests.support.events import request_for, session, summary_event

SEED = SummarySeed(
    timestamp=50.0,
    author="model",
    content=Content(role="model", parts=[Part(text="earlier: the user asked for a plan")]),
)


def test_the_window_is_the_requested_events_in_the_requested_order() -> None:
    log = session(2)
    chosen = [log[5], log[1], log[2]]  # the order handed, not the offset order
    window = request_window(request_for(chosen), {r.offset: r for r in log})
    assert [event.id for event in window] == ["c1", "c0", "r0"]


def test_a_seed_comes_first_with_the_previous_summary_and_its_start() -> None:
    log = session(2)
    request = request_for(log[4:6], seed=SEED)
    window = request_window(request, {r.offset: r for r in log})
    assert [event.id for event in window[1:]] == ["q1", "c1"]
    seed = window[0]
    assert (seed.author, seed.timestamp, seed.content) == ("model", 50.0, SEED.content)
    assert seed.invocation_id == f"seed-{request.request_id}"
    # The event the projector's token trigger put first in the window, but for its fresh id.
    text = "earlier: the user asked for a plan"
    previous = summary_event("s0", 50.0, 80.0, 81.0, text=text)
    assert seed == seed_event(previous, invocation_id=seed.invocation_id)


def test_a_missing_offset_is_a_range_not_found() -> None:
    log = session(1)
    request = request_for(log)
    with pytest.raises(RangeNotFoundError, match=f"offset {log[2].offset} holds no event"):
        request_window(request, {r.offset: r for r in log if r.offset != log[2].offset})


def test_another_event_at_an_offset_is_a_range_not_found() -> None:
    log = session(1)
    request = request_for(log).model_copy(update={"event_ids": ("q0", "c0", "x", "a0")})
    with pytest.raises(RangeNotFoundError, match="holds event 'r0', the request names 'x'"):
        request_window(request, {r.offset: r for r in log})


def test_a_range_whose_timestamps_disagree_is_not_found() -> None:
    log = session(1)
    request = request_for(log).model_copy(update={"end_timestamp": 999.0})
    with pytest.raises(RangeNotFoundError, match=r"spans \[100.0, 103.0\]"):
        request_window(request, {r.offset: r for r in log})


def test_the_error_names_the_request_and_is_not_retriable() -> None:
    log = session(1)
    request = request_for(log)
    with pytest.raises(RangeNotFoundError) as caught:
        request_window(request, {Offset(0): log[0]})
    assert caught.value.request_id == request.request_id
    assert not caught.value.retriable
