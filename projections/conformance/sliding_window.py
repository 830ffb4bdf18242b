"""Conformance runner for ``sliding_window`` vectors: the post-invocation hook (§4, §6)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.token_threshold import POST_INVOCATION, evaluate_token_threshold
from projections.compaction.window import CompactionWindow
from projections.fold.rewind import drop_rewound
from schemas.event import Event, content_to_json


def seed_json(window: CompactionWindow | None) -> dict[str, Any] | None:
    """The vector shape of a window's seed event, or None."""
    seed = window.seed if window is not None else None
    if seed is None:
        return None
    return {
        "timestamp": seed.timestamp,
        "author": seed.author,
        "branch": seed.branch,
        "content": content_to_json(seed.content) if seed.content is not None else None,
    }


def range_json(window: CompactionWindow | None) -> dict[str, float] | None:
    """The vector shape of the new summary's range, or None without a window."""
    if window is None:
        return None
    return {"start_timestamp": window.start_timestamp, "end_timestamp": window.end_timestamp}


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """What the post-invocation hook does for one vector's events and config."""
    events = [Event.model_validate(event) for event in vector_input["events"]]
    config = CompactionConfig.model_validate(vector_input["config"])
    # The fake summarizer of the recording always answers, so a window is a summary.
    window = select_post_invocation_window(events, config)
    result: dict[str, Any] = {
        "trigger": window.trigger if window is not None else None,
        "summarized_event_ids": list(window.event_ids) if window is not None else [],
        "seed": seed_json(window),
        "compaction": range_json(window),
    }
    if config.has_token_threshold:
        live = [e for e in drop_rewound(events) if e.isolation_scope is None]
        outcome = evaluate_token_threshold(events, config, POST_INVOCATION) if live else None
        count = outcome.observed_prompt_token_count if outcome is not None else None
        result["token_observed_prompt_token_count"] = count
    return result
