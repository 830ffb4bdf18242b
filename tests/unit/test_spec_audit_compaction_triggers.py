"""Spec audit of the compaction triggers (reference §2, §4, §5, §6, §15).

Scenarios are built from the reference text and run either directly or as
vector-shaped inputs through the conformance adapters; expected values are
worked out by hand (comments show the arithmetic).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from projections.compaction import select_post_invocation_window
from projections.compaction_config import CompactionConfig
from projections.conformance.sliding_window import run as run_sliding_vector
from projections.conformance.token_threshold import run as run_token_vector
from projections.sliding_window import select_sliding_window
from projections.token_threshold import TokenHook, evaluate_token_threshold, safe_split_index
from schemas.event import Event, content_to_json, event_to_json
from tests.unit.builders import (
    bare_event,
    call_event,
    ids,
    response_event,
    rewind_event,
    summary_event,
    text_event,
)


def _usage(count: int) -> dict[str, Any]:
    return {"usage_metadata": {"prompt_token_count": count}}


def _invocation(n: int, ts: float, answer: str = "x", **fields: Any) -> list[Event]:
    return [
        text_event(f"q{n}", f"inv{n}", ts, **fields),
        text_event(f"a{n}", f"inv{n}", ts + 1, answer, author="agent", **fields),
    ]


def _sliding(interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(compaction_interval=interval, overlap_size=overlap)


def _token(threshold: int, retention: int) -> CompactionConfig:
    return CompactionConfig(token_threshold=threshold, event_retention_size=retention)


def _as_input(events: list[Event], **fields: Any) -> dict[str, Any]:
    return {"events": [event_to_json(event) for event in events], **fields}


# --------------------------------------------------------------------------- §2 config


@pytest.mark.parametrize(
    "fields",
    [
        {"token_threshold": 10},
        {"event_retention_size": 1},
        {"compaction_interval": 2},
        {"overlap_size": 0},
        {"compaction_interval": 2, "overlap_size": 0, "token_threshold": 10},
        {},
        {"compaction_interval": 0, "overlap_size": 0},
        {"compaction_interval": 2, "overlap_size": -1},
        {"token_threshold": 0, "event_retention_size": 1},
        {"token_threshold": 10, "event_retention_size": -1},
        {"compaction_interval": 2, "overlap_size": 0, "summarizer_model": "x"},
    ],
)
def test_invalid_configs_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CompactionConfig.model_validate(fields)


def test_valid_configs_are_accepted() -> None:
    token_only = _token(1, 0)
    assert token_only.has_token_threshold
    assert not token_only.has_sliding_window
    sliding_only = _sliding(1, 0)
    assert sliding_only.has_sliding_window
    assert not sliding_only.has_token_threshold
    both = CompactionConfig(
        compaction_interval=1, overlap_size=0, token_threshold=1, event_retention_size=0
    )
    assert both.has_sliding_window
    assert both.has_token_threshold


# --------------------------------------------------------------------------- §4 sliding window


def test_sliding_summary_with_end_zero_is_skipped_even_when_appended_last() -> None:
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        summary_event("s1", 100, 103, 104),
        *_invocation(3, 105),
        summary_event("s0", 0.0, 0.0, 107),
    ]
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("q3", "a3")
    assert (window.start_timestamp, window.end_timestamp) == (105.0, 106.0)


def test_sliding_invocation_with_max_timestamp_zero_is_never_new() -> None:
    events = [*_invocation(0, 0.0), *_invocation(1, 100)]
    events[1] = text_event("a0", "inv0", 0.0, author="agent")
    assert select_sliding_window(events, _sliding(2, 0)) is None
    # It still counts as an older invocation for the overlap.
    window = select_sliding_window(events, _sliding(1, 1))
    assert window is not None
    assert window.event_ids == ("q0", "a0", "q1", "a1")
    assert (window.start_timestamp, window.end_timestamp) == (0.0, 101.0)


def test_sliding_previous_end_is_most_recently_appended_not_latest_survivor() -> None:
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        summary_event("wide", 100, 103, 104),
        summary_event("narrow", 100, 101, 105),  # subsumed, but appended last
        *_invocation(3, 106),
    ]
    # Previous end 101 (not 103): inv2 (max 103) and inv3 are new, 2 >= 2.
    # Gate: W' [102, 107] leaves "wide" visible; removable = 38 + 39 - 27 = 50 > 41.
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q2", "a2", "q3", "a3")


def test_sliding_slice_keeps_other_and_anonymous_events() -> None:
    events = [
        *_invocation(1, 100),
        summary_event("s", 100, 101, 102),
        text_event("q2", "inv2", 103),
        text_event("anon", "", 104),
        text_event("q3", "inv3", 105),
        text_event("a2", "inv2", 106, author="agent"),
        text_event("a3", "inv3", 107, author="agent"),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q2", "anon", "q3", "a2", "a3")
    assert (window.start_timestamp, window.end_timestamp) == (103.0, 107.0)


def test_sliding_ignores_scoped_events() -> None:
    events = [
        text_event("q1", "inv1", 100),
        text_event("t1", "inv1", 101, isolation_scope="task"),
        text_event("a1", "inv1", 102, author="agent"),
        *_invocation(2, 103),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2")
    scoped_only = [*_invocation(1, 100), text_event("t", "invS", 102, isolation_scope="task")]
    assert select_sliding_window(scoped_only, _sliding(2, 0)) is None


def test_sliding_slice_ends_at_last_event_of_any_kind_of_the_end_invocation() -> None:
    # §4 step 7 read literally: a summary sharing inv2's id is inv2's last
    # event, so the slice reaches it (summaries themselves are left out).
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        text_event("anon", "", 104),
        summary_event("s", 1.0, 2.0, 105, invocation_id="inv2"),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2", "anon")
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 104.0)


def test_sliding_slice_starts_at_first_event_of_any_kind_of_the_start_invocation() -> None:
    events = [
        *_invocation(1, 100),
        summary_event("s", 100, 101, 102, invocation_id="inv2"),
        text_event("anon", "", 103),
        *_invocation(2, 104),
    ]
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("anon", "q2", "a2")


def test_sliding_gate_refuses_small_window_after_big_summary_then_retries() -> None:
    events = [
        *_invocation(1, 100),
        summary_event("s", 100, 101, 102, "S" * 200),  # 238 characters
        *_invocation(2, 103),
    ]
    # removable = 38 + 39 - 27 = 50 <= 238
    assert select_sliding_window(events, _sliding(1, 0)) is None
    events += _invocation(3, 105, answer="A" * 300)
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("q2", "a2", "q3", "a3")


def test_sliding_first_summary_takes_everything_and_overlap_is_clamped() -> None:
    events = [*_invocation(1, 100), *_invocation(2, 102), *_invocation(3, 104)]
    window = select_sliding_window(events, _sliding(3, 5))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2", "q3", "a3")


def test_sliding_rewound_invocations_are_not_counted() -> None:
    events = [*_invocation(1, 100), *_invocation(2, 102), rewind_event("r", "inv2", 104)]
    assert select_sliding_window(events, _sliding(2, 0)) is None
    events += _invocation(3, 105)
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q3", "a3")


def test_sliding_empty_prefix_stops() -> None:
    events = [
        call_event("c", "inv1", 100, "x", long_running_tool_ids=["x"]),
        *_invocation(2, 101),
    ]
    # The long-running call of the first (older) invocation is protected.
    assert select_sliding_window(events, _sliding(2, 0)) is None


# --------------------------------------------------------------------------- §5 token threshold


def test_token_equal_count_triggers_and_lower_does_not() -> None:
    events = [text_event("e1", "inv1", 100), text_event("e2", "inv2", 101, **_usage(50))]
    fired = evaluate_token_threshold(events, _token(50, 0))
    assert fired.window is not None
    assert fired.window.event_ids == ("e1", "e2")
    assert evaluate_token_threshold(events, _token(51, 0)).window is None


def test_token_candidates_equal_to_retention_stop() -> None:
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv2", 101),
        text_event("e3", "inv3", 102, **_usage(100)),
    ]
    outcome = evaluate_token_threshold(events, _token(50, 3))
    assert outcome.window is None
    assert ids(list(outcome.candidates)) == ["e1", "e2", "e3"]
    assert evaluate_token_threshold(events, _token(50, 2)).window is not None


def test_token_raw_events_under_older_non_latest_summary_are_candidates_again() -> None:
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv2", 101),
        text_event("e3", "inv3", 102),
        text_event("e4", "inv4", 103),
        summary_event("s1", 101, 103, 104, "one"),
        summary_event("s2", 100, 101, 105, "two"),  # partial overlap: both survive
        text_event("e5", "inv5", 106, **_usage(100)),
    ]
    outcome = evaluate_token_threshold(events, _token(50, 1))
    assert outcome.previous_compaction_end_timestamp == 101.0
    assert ids(list(outcome.candidates)) == ["e3", "e4", "e5"]
    window = outcome.window
    assert window is not None
    assert window.event_ids == ("e3", "e4")
    assert window.seed is not None
    assert window.seed.timestamp == 100.0  # s2's start
    assert window.seed.content is not None
    assert content_to_json(window.seed.content) == {"role": "model", "parts": [{"text": "two"}]}
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 103.0)


def test_safe_split_retained_response_pulls_its_call() -> None:
    candidates = [
        text_event("q", "inv1", 100),
        call_event("c", "inv1", 101, "a"),
        text_event("t", "inv1", 102, author="agent"),
        response_event("r", "inv1", 103, "a"),
        text_event("t2", "inv1", 104, author="agent"),
    ]
    assert safe_split_index(candidates, 2) == 1  # initial 3 moves back before the call
    assert safe_split_index(candidates, 1) == 4
    assert safe_split_index(candidates, 5) == 0
    idless = [*candidates[:3], bare_event("r", "inv1", 103, content=_idless_response())]
    assert safe_split_index(idless, 1) == 3  # id-less responses are ignored


def _idless_response() -> dict[str, Any]:
    return {"role": "user", "parts": [{"function_response": {"name": "tool", "response": {}}}]}


def test_token_retention_zero_compacts_all_candidates_up_to_the_prefix() -> None:
    events = [
        text_event("e1", "inv1", 100),
        call_event("c", "inv2", 101, "p"),
        text_event("e3", "inv3", 102, **_usage(100)),
    ]
    window = evaluate_token_threshold(events, _token(50, 0)).window
    assert window is not None
    assert window.event_ids == ("e1",)


def test_token_seed_is_previous_summary_start_with_its_branch_and_scope() -> None:
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv1", 101),
        summary_event("p", 100, 101, 102, "prev", branch="root.a"),
        text_event("e4", "inv2", 103),
        text_event("e5", "inv2", 104, **_usage(500)),
    ]
    window = evaluate_token_threshold(events, _token(50, 1), seed_invocation_id="fresh").window
    assert window is not None
    seed = window.seed
    assert seed is not None
    assert (seed.timestamp, seed.author, seed.branch) == (100.0, "model", "root.a")
    assert seed.invocation_id == "fresh"
    assert seed.actions.compaction is None
    assert window.events[0] is seed
    assert window.event_ids == ("e4",)
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 103.0)


def test_token_pre_request_reads_only_its_agent_post_invocation_any() -> None:
    events = [
        text_event("q", "inv1", 100),
        text_event("w", "inv1", 101, author="worker", **_usage(5000)),
        text_event("f", "inv1", 102, author="formatter", **_usage(100)),
        text_event("q2", "inv2", 103),
    ]
    config = _token(1000, 1)
    post = evaluate_token_threshold(events, config)
    assert post.observed_prompt_token_count == 100
    assert post.window is None
    pre = evaluate_token_threshold(events, config, TokenHook(agent_name="worker"))
    assert pre.observed_prompt_token_count == 5000
    assert pre.window is not None
    assert pre.window.event_ids == ("q", "w", "f")


def test_token_hook_works_within_its_isolation_scope() -> None:
    events = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="worker", **_usage(5000)),
        summary_event("s", 100, 100.5, 101.5),
        text_event("t1", "inv1", 102, author="worker", isolation_scope="task"),
        text_event("t2", "inv1", 103, author="worker", isolation_scope="task", **_usage(2000)),
    ]
    config = _token(1000, 0)
    scoped = evaluate_token_threshold(
        events, config, TokenHook(agent_name="worker", isolation_scope="task")
    )
    assert scoped.observed_prompt_token_count == 2000
    assert scoped.previous_compaction_end_timestamp == 0.0  # the unscoped summary is not seen
    assert ids(list(scoped.candidates)) == ["t1", "t2"]
    assert scoped.window is not None
    assert scoped.window.seed is None
    assert scoped.window.event_ids == ("t1", "t2")
    # After the invocation (unscoped): the scan stops at the summary and the
    # estimate decides; candidates are the unscoped raw events after 100.5.
    post = evaluate_token_threshold(events, config)
    assert ids(list(post.candidates)) == ["a1"]
    assert post.observed_prompt_token_count == (3 + 1) // 4  # summary "sum" + a1 "x"


def test_token_gate_refuses_content_less_window() -> None:
    events = [bare_event("e1", "inv1", 100), bare_event("e2", "inv2", 101, **_usage(100))]
    outcome = evaluate_token_threshold(events, _token(50, 0))
    assert outcome.observed_prompt_token_count == 100
    assert outcome.window is None


# --------------------------------------------------------------------------- §6 precedence


def _both(threshold: int, retention: int, interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(
        token_threshold=threshold,
        event_retention_size=retention,
        compaction_interval=interval,
        overlap_size=overlap,
    )


def test_token_summary_takes_precedence_over_sliding() -> None:
    events = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="agent", **_usage(100)),
        text_event("q2", "inv2", 102),
        text_event("a2", "inv2", 103, author="agent", **_usage(100)),
    ]
    window = select_post_invocation_window(events, _both(50, 1, 2, 0))
    assert window is not None
    assert window.trigger == "token_threshold"
    assert window.event_ids == ("q1", "a1", "q2")
    below = select_post_invocation_window(events, _both(500, 1, 2, 0))
    assert below is not None
    assert below.trigger == "sliding_window"
    assert below.event_ids == ("q1", "a1", "q2", "a2")


def test_sliding_runs_when_token_window_is_refused_by_the_gate() -> None:
    events = [
        bare_event("e1", "inv1", 100),
        bare_event("e2", "inv1", 101, **_usage(100)),
        text_event("q2", "inv2", 102),
        text_event("a2", "inv2", 103, author="agent"),
    ]
    # Token: window [e1, e2] is content-less, refused. Sliding: all four,
    # removable = 38 + 39 - 27 = 50 > 0.
    result = run_sliding_vector(
        _as_input(
            events,
            config={
                "compaction_interval": 2,
                "overlap_size": 0,
                "token_threshold": 50,
                "event_retention_size": 2,
            },
        )
    )
    assert result == {
        "trigger": "sliding_window",
        "summarized_event_ids": ["e1", "e2", "q2", "a2"],
        "seed": None,
        "compaction": {"start_timestamp": 100.0, "end_timestamp": 103.0},
        "token_observed_prompt_token_count": 100,
    }


def test_sliding_vector_shape_without_token_pair() -> None:
    events = [*_invocation(1, 100), *_invocation(2, 102)]
    result = run_sliding_vector(
        _as_input(events, config={"compaction_interval": 3, "overlap_size": 0})
    )
    assert result == {"trigger": None, "summarized_event_ids": [], "seed": None, "compaction": None}


def test_sliding_vector_token_trigger_reports_seed() -> None:
    events = [
        text_event("e1", "inv1", 100),
        summary_event("p", 100, 100, 101, "prev"),
        text_event("e3", "inv3", 102),
        text_event("e4", "inv4", 103, **_usage(100)),
    ]
    result = run_sliding_vector(
        _as_input(
            events,
            config={
                "compaction_interval": 1,
                "overlap_size": 0,
                "token_threshold": 50,
                "event_retention_size": 1,
            },
        )
    )
    assert result == {
        "trigger": "token_threshold",
        "summarized_event_ids": ["e3"],
        "seed": {
            "timestamp": 100.0,
            "author": "model",
            "branch": None,
            "content": {"role": "model", "parts": [{"text": "prev"}]},
        },
        "compaction": {"start_timestamp": 100.0, "end_timestamp": 102.0},
        "token_observed_prompt_token_count": 100,
    }


# --------------------------------------------------------------------------- token adapter


def test_token_vector_keeps_partially_overlapping_older_summary_visible() -> None:
    events = [
        text_event("e0", "inv0", 90),
        text_event("e1", "inv1", 100),
        summary_event("old", 90, 100, 100.5, "old"),
        text_event("e2", "inv2", 101),
        summary_event("p", 95, 101, 101.5, "prev"),
        text_event("e3", "inv3", 102),
        text_event("e4", "inv4", 103),
        text_event("e5", "inv5", 104, **_usage(100)),
    ]
    result = run_token_vector(
        _as_input(
            events,
            config={"token_threshold": 50, "event_retention_size": 1},
            hook="post_invocation",
            agent_name="",
            current_branch=None,
        )
    )
    # Latest survivor p ends at 101; split keeps e5; seed at p's start 95 so
    # the new range [95, 103] contains p but not "old" [90, 100].
    assert result == {
        "observed_prompt_token_count": 100,
        "triggered": True,
        "summarized_event_ids": ["e3", "e4"],
        "seed": {
            "timestamp": 95.0,
            "author": "model",
            "branch": None,
            "content": {"role": "model", "parts": [{"text": "prev"}]},
        },
        "compaction": {"start_timestamp": 95.0, "end_timestamp": 103.0},
        "previous_compaction_end_timestamp": 101.0,
        "candidate_event_ids": ["e3", "e4", "e5"],
        "retained_event_ids": ["e5"],
        "visible_after": ["summary:old", "summary:NEW", "e5"],
    }


def test_token_vector_not_triggered_still_reports_masking() -> None:
    events = [
        text_event("e2", "inv2", 101),
        text_event("e1", "inv1", 100),
        summary_event("p", 100, 100, 102),
        text_event("e3", "inv3", 103, **_usage(10)),
    ]
    result = run_token_vector(
        _as_input(
            events,
            config={"token_threshold": 50, "event_retention_size": 0},
            hook="pre_request",
            agent_name="agent",
            current_branch=None,
        )
    )
    assert result["triggered"] is False
    # Only the user recorded a count and the scan stops at p anyway: estimate
    # of the request for "agent": "sum" + "x" (e2) + "x" (e3) = 5 // 4.
    assert result["observed_prompt_token_count"] == 1
    assert result["previous_compaction_end_timestamp"] == 100.0
    assert result["candidate_event_ids"] == ["e2", "e3"]
    assert result["retained_event_ids"] == ["e2", "e3"]
    assert result["visible_after"] == ["summary:p", "e2", "e3"]


def test_token_worked_example_of_the_reference() -> None:
    # §5.6: threshold 50, retention 2.
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv1", 101, author="agent"),
        summary_event("e3", 100, 101, 102, "P"),
        text_event("e4", "inv2", 103),
        text_event("e5", "inv2", 104, author="agent"),
        text_event("e6", "inv3", 105),
        text_event("e7", "inv3", 106, author="agent", **_usage(100)),
    ]
    result = run_token_vector(
        _as_input(
            events,
            config={"token_threshold": 50, "event_retention_size": 2},
            hook="post_invocation",
            agent_name="",
            current_branch=None,
        )
    )
    assert result == {
        "observed_prompt_token_count": 100,
        "triggered": True,
        "summarized_event_ids": ["e4", "e5"],
        "seed": {
            "timestamp": 100.0,
            "author": "model",
            "branch": None,
            "content": {"role": "model", "parts": [{"text": "P"}]},
        },
        "compaction": {"start_timestamp": 100.0, "end_timestamp": 104.0},
        "previous_compaction_end_timestamp": 101.0,
        "candidate_event_ids": ["e4", "e5", "e6", "e7"],
        "retained_event_ids": ["e6", "e7"],
        "visible_after": ["summary:NEW", "e6", "e7"],
    }


def test_sliding_overlap_reaching_first_invocation_subsumes_previous_summary() -> None:
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        summary_event("s1", 100, 103, 104),
        *_invocation(3, 105),
        *_invocation(4, 107),
    ]
    window = select_sliding_window(events, _sliding(2, 2))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4")
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 108.0)
    # With overlap 1 the new range [102, 108] leaves s1 visible (§4.2).
    partial = select_sliding_window(events, _sliding(2, 1))
    assert partial is not None
    assert (partial.start_timestamp, partial.end_timestamp) == (102.0, 108.0)


def test_sliding_previous_end_ignores_scoped_summaries() -> None:
    events = [
        *_invocation(1, 100),
        *_invocation(2, 102),
        summary_event("scoped", 0, 1000, 104, isolation_scope="task"),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2")


def test_post_invocation_hook_needs_live_unscoped_events() -> None:
    events = [text_event("t", "inv1", 100, isolation_scope="task", **_usage(10_000))]
    config = _both(50, 0, 1, 0)
    assert select_post_invocation_window(events, config) is None
    result = run_sliding_vector(
        _as_input(
            events,
            config={
                "compaction_interval": 1,
                "overlap_size": 0,
                "token_threshold": 50,
                "event_retention_size": 0,
            },
        )
    )
    assert result["trigger"] is None
    assert result["token_observed_prompt_token_count"] is None


def _confirmation_shape(timestamp: float) -> list[Event]:
    """Tool call x, the synthetic long-running confirmation call cx, the placeholder."""
    return [
        call_event("c", "inv2", timestamp, "x"),
        call_event(
            "conf",
            "inv2",
            timestamp + 1,
            "cx",
            "adk_request_confirmation",
            long_running_tool_ids=["cx"],
        ),
        bare_event(
            "p",
            "inv2",
            timestamp + 2,
            content={
                "role": "user",
                "parts": [{"function_response": {"id": "x", "name": "tool", "response": {}}}],
            },
            actions={"requested_tool_confirmations": {"x": {"hint": "sure?"}}},
        ),
    ]


def test_sliding_real_confirmation_shape_blocks_until_both_are_answered() -> None:
    head = [text_event("q1", "inv1", 100), *_confirmation_shape(101)]
    answer_cx = response_event("rcx", "inv3", 105, "cx", "adk_request_confirmation")
    answer_x = response_event("rx", "inv3", 106, "x")
    tail = [text_event("q3", "inv3", 104)]
    only_cx = select_sliding_window([*head, *tail, answer_cx], _sliding(3, 0))
    assert only_cx is not None
    assert only_cx.event_ids == ("q1",)  # cut at the invocation boundary
    both = select_sliding_window([*head, *tail, answer_cx, answer_x], _sliding(3, 0))
    assert both is not None
    assert both.event_ids == ("q1", "c", "conf", "p", "q3", "rcx", "rx")


def test_token_unresolved_auth_request_stops_the_prefix_until_answered() -> None:
    auth = bare_event("auth", "inv1", 101, actions={"requested_auth_configs": {"a": {"x": 1}}})
    events = [text_event("q", "inv1", 100), auth, text_event("t", "inv1", 102, **_usage(100))]
    pending = evaluate_token_threshold(events, _token(50, 0)).window
    assert pending is not None
    assert pending.event_ids == ("q",)
    answer = response_event("r", "inv1", 103, "a", "adk_request_credential", **_usage(100))
    resolved = evaluate_token_threshold([*events, answer], _token(50, 0)).window
    assert resolved is not None
    assert resolved.event_ids == ("q", "auth", "t", "r")
