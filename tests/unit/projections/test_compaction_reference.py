"""The two triggers together (reference §6, §15) and cases ADK itself decided.

The precedence and adapter cases are built from the reference text and run
either directly or as vector-shaped inputs through the conformance adapters;
expected values are worked out by hand (comments show the arithmetic). The
differential cases are vector-shaped (``kind`` + ``input`` as in
``tests/conformance/vectors``) and expect what ADK 2.13.0 produced for that
input when run locally (recorded data, like the shared vectors); the core must
reproduce it through :func:`projections.conformance.actual_for`.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.sliding_window import select_sliding_window
from projections.compaction.token_threshold import evaluate_token_threshold
from projections.conformance import actual_for
from projections.conformance.sliding_window import run as run_sliding_vector
from projections.conformance.token_threshold import run as run_token_vector
from schemas.event import Event, event_to_json
from tests.support.events import (
    bare_event,
    call_event,
    exchange,
    response_event,
    summary_event,
    text_event,
)
from tests.support.vectors import Json, text_content, vector_event


def _usage(count: int) -> dict[str, Any]:
    return {"usage_metadata": {"prompt_token_count": count}}


def _sliding(interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(compaction_interval=interval, overlap_size=overlap)


def _token(threshold: int, retention: int) -> CompactionConfig:
    return CompactionConfig(token_threshold=threshold, event_retention_size=retention)


def _as_input(events: list[Event], **fields: Any) -> dict[str, Any]:
    return {"events": [event_to_json(event) for event in events], **fields}


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
    events = [*exchange(1, 100), *exchange(2, 102)]
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
        *exchange(1, 100),
        *exchange(2, 102),
        summary_event("s1", 100, 103, 104),
        *exchange(3, 105),
        *exchange(4, 107),
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
        *exchange(1, 100),
        *exchange(2, 102),
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


# No event has an invocation id, so there is no newest invocation: the
# unanswered call is not protected as "possibly still running" and is proven
# dead, so the whole window is compacted (not just the user message before it).
_NO_INVOCATION_IDS = [
    vector_event("e1", "", "user", 100.0, text_content("user", "question")),
    vector_event(
        "e2",
        "",
        "agent",
        101.0,
        {"parts": [{"functionCall": {"id": "c1", "name": "crashy", "args": {}}}], "role": "model"},
    ),
    vector_event(
        "e3",
        "",
        "agent",
        102.0,
        text_content("model", "answer"),
        usageMetadata={"promptTokenCount": 100},
    ),
]

CASES: list[tuple[str, str, Json, Json]] = [
    (
        "token-threshold-dead-call-without-invocation-ids",
        "token_threshold",
        {
            "events": _NO_INVOCATION_IDS,
            "config": {"token_threshold": 50, "event_retention_size": 0},
            "hook": "post_invocation",
            "agent_name": "",
            "current_branch": None,
        },
        {
            "observed_prompt_token_count": 100,
            "triggered": True,
            "summarized_event_ids": ["e1", "e2", "e3"],
            "seed": None,
            "compaction": {"start_timestamp": 100.0, "end_timestamp": 102.0},
            "previous_compaction_end_timestamp": 0.0,
            "candidate_event_ids": ["e1", "e2", "e3"],
            "retained_event_ids": [],
            "visible_after": ["summary:NEW"],
        },
    ),
    (
        "post-invocation-hook-dead-call-without-invocation-ids",
        "sliding_window",
        {
            "events": _NO_INVOCATION_IDS,
            "config": {
                "compaction_interval": 1,
                "overlap_size": 0,
                "token_threshold": 50,
                "event_retention_size": 0,
            },
        },
        {
            "trigger": "token_threshold",
            "summarized_event_ids": ["e1", "e2", "e3"],
            "seed": None,
            "compaction": {"start_timestamp": 100.0, "end_timestamp": 102.0},
            "token_observed_prompt_token_count": 100,
        },
    ),
    (
        # ADK's masking function orders by timestamp even without any summary.
        "visible-after-sorted-without-summary",
        "token_threshold",
        {
            "events": [
                vector_event("e1", "inv1", "user", 101.0, text_content("user", "first")),
                vector_event("e2", "inv1", "agent", 100.0, text_content("model", "second")),
                vector_event("e3", "inv2", "user", 102.0, text_content("user", "third")),
            ],
            "config": {"token_threshold": 1000, "event_retention_size": 1},
            "hook": "post_invocation",
            "agent_name": "",
            "current_branch": None,
        },
        {
            "observed_prompt_token_count": 4,
            "triggered": False,
            "summarized_event_ids": [],
            "seed": None,
            "compaction": None,
            "previous_compaction_end_timestamp": 0.0,
            "candidate_event_ids": ["e1", "e2", "e3"],
            "retained_event_ids": ["e1", "e2", "e3"],
            "visible_after": ["e2", "e1", "e3"],
        },
    ),
]


@pytest.mark.parametrize(
    ("kind", "vector_input", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_matches_adk(kind: str, vector_input: Json, expected: Json) -> None:
    assert actual_for({"kind": kind, "input": vector_input}) == expected
