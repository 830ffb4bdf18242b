"""The token-threshold trigger (reference §5), case by case from the reference text.

Expected values are worked out by hand from the reference (comments show the arithmetic).
"""

from __future__ import annotations

from typing import Any

from projections.compaction.config import CompactionConfig
from projections.compaction.token_threshold import (
    TokenHook,
    evaluate_token_threshold,
    safe_split_index,
)
from schemas.event import content_to_json
from tests.support.events import (
    bare_event,
    call_event,
    ids,
    response_event,
    summary_event,
    text_event,
)


def _usage(count: int) -> dict[str, Any]:
    return {"usage_metadata": {"prompt_token_count": count}}


def _token(threshold: int, retention: int) -> CompactionConfig:
    return CompactionConfig(token_threshold=threshold, event_retention_size=retention)


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
