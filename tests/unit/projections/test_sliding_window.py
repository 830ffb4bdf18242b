from __future__ import annotations

import math

from projections.compaction.config import CompactionConfig
from projections.compaction.sliding_window import previous_sliding_end, select_sliding_window
from schemas.event import Event
from tests.support.events import rewind_event, summary_event, text_event


def _config(interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(compaction_interval=interval, overlap_size=overlap)


def _invocation(n: int, ts: float) -> list[Event]:
    return [
        text_event(f"q{n}", f"inv{n}", ts, f"question {n}"),
        text_event(f"a{n}", f"inv{n}", ts + 1, f"answer {n}", author="agent"),
    ]


def test_worked_example_of_the_reference() -> None:
    config = _config(2, 1)
    events = _invocation(1, 100)
    assert select_sliding_window(events, config) is None
    events += _invocation(2, 102)
    first = select_sliding_window(events, config)
    assert first is not None
    assert (first.start_timestamp, first.end_timestamp) == (100.0, 103.0)
    assert first.event_ids == ("q1", "a1", "q2", "a2")
    events += [summary_event("s1", 100, 103, 104), *_invocation(3, 105)]
    assert select_sliding_window(events, config) is None
    events += _invocation(4, 107)
    second = select_sliding_window(events, config)
    assert second is not None
    assert second.event_ids == ("q2", "a2", "q3", "a3", "q4", "a4")
    assert (second.start_timestamp, second.end_timestamp) == (102.0, 108.0)
    assert second.trigger == "sliding_window"
    assert second.seed is None


def test_exactly_interval_new_invocations_trigger() -> None:
    events = [*_invocation(1, 100), *_invocation(2, 102), *_invocation(3, 104)]
    assert select_sliding_window(events, _config(4, 0)) is None
    window = select_sliding_window(events, _config(3, 0))
    assert window is not None
    assert len(window.events) == 6


def test_previous_end_is_most_recently_appended_not_widest() -> None:
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        summary_event("wide", 100, 103, 104),
        summary_event("narrow", 100, 101, 105),
    ]
    assert previous_sliding_end(events) == 101.0
    # inv2 (max 103 > 101) and inv3 are new.
    events += _invocation(3, 106)
    window = select_sliding_window(events, _config(2, 0))
    assert window is not None
    assert window.event_ids == ("q2", "a2", "q3", "a3")


def test_end_zero_is_skipped_but_nan_end_is_taken() -> None:
    zero = summary_event("z", 0.0, 0.0, 104)
    assert previous_sliding_end([summary_event("s", 1, 5, 6), zero]) == 5.0
    nan = summary_event("n", 100, math.nan, 104)
    assert math.isnan(previous_sliding_end([nan]))
    # With a NaN previous end no invocation is newer, so nothing fires.
    assert (
        select_sliding_window([*_invocation(1, 100), *_invocation(2, 102), nan], _config(1, 0))
        is None
    )


def test_invocation_with_latest_timestamp_zero_is_never_new() -> None:
    events = [text_event("z1", "inv0", 0.0), text_event("q1", "inv1", 1.0)]
    assert select_sliding_window(events, _config(2, 0)) is None
    window = select_sliding_window(events, _config(1, 0))
    assert window is not None
    assert window.event_ids == ("q1",)


def test_window_takes_everything_in_the_slice_and_drops_summaries() -> None:
    events = [
        text_event("q1", "inv1", 100, "question one"),
        text_event("x", "", 101, "no invocation"),
        summary_event("s", 10, 20, 102),
        text_event("q2", "inv2", 103, "question two"),
    ]
    window = select_sliding_window(events, _config(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "x", "q2")


def test_rewound_and_scoped_events_are_ignored() -> None:
    scoped = text_event("t", "inv9", 99, "scoped", isolation_scope="task")
    events = [
        scoped,
        *_invocation(1, 100),
        *_invocation(2, 102),
        rewind_event("r", "inv2", 104),
        *_invocation(3, 105),
    ]
    window = select_sliding_window(events, _config(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q3", "a3")


def test_overlap_larger_than_history_clamps_to_first_invocation() -> None:
    events = [*_invocation(1, 100), summary_event("s", 100, 101, 102), *_invocation(2, 103)]
    window = select_sliding_window(events, _config(1, 5))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2")


def test_real_confirmation_shape_blocks_while_pending_in_newest_invocation() -> None:
    placeholder = Event.model_validate(
        {
            "id": "p",
            "invocation_id": "inv1",
            "author": "agent",
            "timestamp": 103,
            "content": {
                "role": "user",
                "parts": [
                    {"function_response": {"id": "call-1", "name": "tool", "response": {"e": 1}}}
                ],
            },
            "actions": {"requested_tool_confirmations": {"call-1": {"hint": "ok?"}}},
        }
    )
    request = Event.model_validate(
        {
            "id": "r",
            "invocation_id": "inv1",
            "author": "agent",
            "timestamp": 104,
            "long_running_tool_ids": ["conf-1"],
            "content": {
                "role": "model",
                "parts": [{"function_call": {"id": "conf-1", "name": "adk_request_confirmation"}}],
            },
        }
    )
    call = Event.model_validate(
        {
            "id": "c",
            "invocation_id": "inv1",
            "author": "agent",
            "timestamp": 102,
            "content": {
                "role": "model",
                "parts": [{"function_call": {"id": "call-1", "name": "tool", "args": {}}}],
            },
        }
    )
    events = [*_invocation(0, 100), text_event("q1", "inv1", 101, "go"), call, placeholder, request]
    window = select_sliding_window(events, _config(2, 0))
    assert window is not None
    assert window.event_ids == ("q0", "a0", "q1")


def test_the_window_ends_at_the_last_event_of_the_last_new_invocation() -> None:
    # An event without an invocation id after inv2 makes no invocation and is
    # not in the window, which stops at inv2's last event.
    events = [
        text_event("a", "inv1", 100.0),
        text_event("b", "inv1", 101.0, author="agent"),
        text_event("c", "inv2", 102.0),
        text_event("d", "inv2", 103.0, author="agent"),
        text_event("x", "", 104.0, author="agent"),
    ]
    window = select_sliding_window(events, CompactionConfig(compaction_interval=2, overlap_size=0))
    assert window is not None
    assert window.event_ids == ("a", "b", "c", "d")
