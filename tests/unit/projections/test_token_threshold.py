from __future__ import annotations

from typing import Any

import pytest

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.rolling_seed import seed_event
from projections.compaction.token_threshold import (
    TokenHook,
    evaluate_token_threshold,
    safe_split_index,
    select_token_threshold_window,
)
from schemas.event import Event
from tests.support.events import (
    call_event,
    ids,
    response_event,
    seeded_token_example,
    summary_event,
    text_event,
)


def _config(threshold: int, retention: int) -> CompactionConfig:
    return CompactionConfig(token_threshold=threshold, event_retention_size=retention)


def _counted(event_id: str, inv: str, ts: float, tokens: int, **fields: Any) -> Event:
    fields.setdefault("author", "agent")
    return text_event(event_id, inv, ts, usage_metadata={"prompt_token_count": tokens}, **fields)


def test_count_equal_to_threshold_compacts() -> None:
    events = [text_event("e1", "i1", 100), _counted("e2", "i2", 101, 50)]
    assert select_token_threshold_window(events, _config(51, 0)) is None
    window = select_token_threshold_window(events, _config(50, 0))
    assert window is not None
    assert window.event_ids == ("e1", "e2")
    assert window.trigger == "token_threshold"


def test_retention_keeps_the_last_n_raw_events() -> None:
    events = [text_event(f"e{i}", f"i{i}", 100 + i) for i in range(1, 5)]
    events.append(_counted("e5", "i5", 105, 99))
    outcome = evaluate_token_threshold(events, _config(10, 2))
    assert outcome.window is not None
    assert outcome.window.event_ids == ("e1", "e2", "e3")


def test_no_compaction_when_candidates_do_not_exceed_retention() -> None:
    events = [text_event("e1", "i1", 100), _counted("e2", "i2", 101, 99)]
    outcome = evaluate_token_threshold(events, _config(10, 2))
    assert outcome.window is None
    assert ids(list(outcome.candidates)) == ["e1", "e2"]


def test_retained_response_pulls_its_call_into_the_tail() -> None:
    candidates = [
        text_event("q", "i", 1),
        call_event("c", "i", 2, "x"),
        text_event("t", "i", 3, author="agent"),
        response_event("r", "i", 4, "x"),
    ]
    assert safe_split_index(candidates, 1) == 1
    assert safe_split_index(candidates, 4) == 0
    assert safe_split_index(candidates, 5) == 0


def test_post_invocation_reads_any_author_pre_request_only_its_own() -> None:
    events = [
        text_event("e1", "i1", 100),
        _counted("e2", "i1", 101, 5000, author="worker"),
        _counted("e3", "i1", 102, 10, author="formatter"),
    ]
    post = evaluate_token_threshold(events, _config(1000, 1))
    pre = evaluate_token_threshold(events, _config(1000, 1), TokenHook(agent_name="worker"))
    assert post.observed_prompt_token_count == 10
    assert post.window is None
    assert pre.observed_prompt_token_count == 5000
    assert pre.window is not None


def test_seed_carries_previous_summary_at_its_start_timestamp() -> None:
    events = [
        text_event("e1", "i1", 100),
        text_event("e2", "i2", 101),
        summary_event("p", 100, 101, 102, text="previous", branch="root"),
        *[text_event(f"e{i}", f"i{i}", 99 + i) for i in range(4, 7)],
        _counted("e7", "i7", 106, 100),
    ]
    outcome = evaluate_token_threshold(events, _config(50, 2), seed_invocation_id="fresh")
    window = outcome.window
    assert window is not None
    assert outcome.previous_compaction_end_timestamp == 101.0
    assert window.event_ids == ("e4", "e5")
    seed = window.seed
    assert seed is not None
    assert window.events[0] is seed
    assert (seed.timestamp, seed.author, seed.branch, seed.invocation_id) == (
        100.0,
        "model",
        "root",
        "fresh",
    )
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 104.0)


def test_latest_non_subsumed_summary_seeds_and_older_coverage_is_ignored() -> None:
    events = [
        text_event("e1", "i1", 100),
        text_event("e2", "i2", 101),
        text_event("e3", "i3", 102),
        summary_event("s1", 100, 102, 103),
        summary_event("s2", 101, 101.5, 104),  # contained: s1 stays the latest survivor
        summary_event("s3", 100.5, 100.7, 105),  # contained too
        summary_event("s4", 99, 100, 106),  # partial overlap: latest survivor, end 100
        _counted("e4", "i4", 107, 100),
    ]
    outcome = evaluate_token_threshold(events, _config(50, 0))
    assert outcome.previous_compaction_end_timestamp == 100.0
    # e2 and e3 are covered by s1 but newer than the seed summary's end.
    assert ids(list(outcome.candidates)) == ["e2", "e3", "e4"]
    assert outcome.window is not None
    assert outcome.window.seed is not None
    assert outcome.window.seed.timestamp == 99.0


def test_recorded_counts_before_a_summary_are_ignored() -> None:
    events = [
        _counted("e1", "i1", 100, 10_000),
        summary_event("s", 100, 100, 101, text="y" * 40),
        text_event("e2", "i2", 102, "x" * 40),
    ]
    outcome = evaluate_token_threshold(events, _config(1000, 0))
    # Estimate: the summary text (40) plus e2 (40) -> 80 // 4.
    assert outcome.observed_prompt_token_count == 20
    assert outcome.window is None


def test_pending_call_stops_the_prefix() -> None:
    events = [
        text_event("e1", "i1", 100),
        call_event("e2", "i2", 101, "pending"),
        _counted("e3", "i3", 102, 100),
    ]
    window = select_token_threshold_window(events, _config(50, 0))
    assert window is not None
    assert window.event_ids == ("e1",)


def test_post_invocation_prefers_token_threshold_over_sliding_window() -> None:
    config = CompactionConfig(
        compaction_interval=1, overlap_size=0, token_threshold=50, event_retention_size=1
    )
    events = [text_event("e1", "i1", 100, "x" * 30), _counted("e2", "i2", 101, 60)]
    window = select_post_invocation_window(events, config)
    assert window is not None
    assert window.trigger == "token_threshold"
    assert window.event_ids == ("e1",)
    fallback = select_post_invocation_window(events, config, skip_token_threshold=True)
    assert fallback is not None
    assert fallback.trigger == "sliding_window"
    assert fallback.event_ids == ("e1", "e2")


def test_the_seed_carries_the_previous_summary_from_its_start() -> None:
    previous = summary_event(
        "s1", 3.0, 7.0, 8.0, "old summary", branch="root.a", isolation_scope="task-1"
    )
    seed = seed_event(previous, invocation_id="seed-inv")
    assert seed.model_dump(
        mode="json", exclude_none=True, exclude={"id", "actions", "node_info"}
    ) == {
        "invocation_id": "seed-inv",
        "author": "model",
        "branch": "root.a",
        "isolation_scope": "task-1",
        "timestamp": 3.0,
        "content": {"role": "model", "parts": [{"text": "old summary"}]},
    }


def test_a_seed_needs_a_summary() -> None:
    with pytest.raises(ValueError, match=r"^event 'q1' is not a summary event$"):
        seed_event(text_event("q1", "i1", 1.0), invocation_id="seed-inv")


def test_a_tail_that_always_keeps_an_orphaned_response_starts_at_the_first_event() -> None:
    # Each tail from index 1 on holds a response whose call comes only after it: no index
    # gives a tail without an orphan, so the whole list is kept (index 0).
    candidates = [
        response_event("r1", "i", 1, "x"),
        response_event("r2", "i", 2, "x"),
        call_event("c", "i", 3, "x"),
    ]
    assert safe_split_index(candidates, 2) == 0


def test_the_seed_gets_the_fresh_invocation_id_it_is_given() -> None:
    window = select_token_threshold_window(
        seeded_token_example(), _config(50, 2), seed_invocation_id="fresh-1"
    )
    assert window is not None
    assert window.seed is not None
    assert window.seed.invocation_id == "fresh-1"
    assert window.event_ids == ("e4", "e5")


def test_the_seed_invocation_id_is_seed_unless_given() -> None:
    window = select_token_threshold_window(seeded_token_example(), _config(50, 2))
    assert window is not None
    assert window.seed is not None
    assert window.seed.invocation_id == "seed"
    outcome = evaluate_token_threshold(seeded_token_example(), _config(50, 2))
    assert outcome.window is not None
    assert outcome.window.seed is not None
    assert outcome.window.seed.invocation_id == "seed"
