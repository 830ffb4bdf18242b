"""Conformance runner for ``token_threshold`` vectors (§5)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.compaction.config import CompactionConfig
from projections.compaction.masking import mask_compacted
from projections.compaction.render import summary_event
from projections.compaction.token_threshold import (
    POST_INVOCATION,
    TokenHook,
    evaluate_token_threshold,
)
from projections.conformance.sliding_window import range_json, seed_json
from projections.fold.rewind import drop_rewound
from schemas.event import Event

#: Id given to the new summary in ``visible_after``.
NEW_SUMMARY_ID = "NEW"
PLACEHOLDER_SUMMARY = "Summary of the compacted events."


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """What the token trigger reads, chooses and leaves visible for one vector."""
    events = [Event.model_validate(event) for event in vector_input["events"]]
    config = CompactionConfig.model_validate(vector_input["config"])
    agent_name = str(vector_input.get("agent_name") or "")
    if vector_input.get("hook", "post_invocation" if not agent_name else "pre_request") == (
        "post_invocation"
    ):
        hook = POST_INVOCATION  # §5.1: after an invocation there is no agent, branch or scope
    else:
        hook = TokenHook(agent_name=agent_name, current_branch=vector_input.get("current_branch"))
    outcome = evaluate_token_threshold(events, config, hook)
    window = outcome.window
    summarized = window.summarized_events if window is not None else ()
    # By event id, as the vectors list them: a re-delivered copy of a
    # summarized event is not reported as retained.
    summarized_ids = {event.id for event in summarized}
    visible = drop_rewound(events)
    if window is not None:
        latest = max((event.timestamp for event in events), default=0.0)
        summary = summary_event(
            window.events,
            PLACEHOLDER_SUMMARY,
            event_id=NEW_SUMMARY_ID,
            invocation_id="compaction",
            timestamp=latest + 1.0,
            isolation_scope=hook.isolation_scope,
        )
        visible = [*visible, *([summary] if summary is not None else [])]
    # The vectors record ADK's masking function itself, which orders by
    # timestamp even when the list holds no summary; contents assembly calls
    # it only when one is present (§3.3), hence mask_compacted's stream order.
    # A stable sort by timestamp leaves an already masked list as it is.
    shown = sorted(mask_compacted(visible, agent_name), key=lambda event: event.timestamp)
    return {
        "observed_prompt_token_count": outcome.observed_prompt_token_count,
        "triggered": window is not None,
        "summarized_event_ids": [event.id for event in summarized],
        "seed": seed_json(window),
        "compaction": range_json(window),
        "previous_compaction_end_timestamp": outcome.previous_compaction_end_timestamp,
        "candidate_event_ids": [event.id for event in outcome.candidates],
        "retained_event_ids": [
            event.id for event in outcome.candidates if event.id not in summarized_ids
        ],
        "visible_after": [
            f"summary:{event.id}" if event.actions.compaction is not None else event.id
            for event in shown
        ],
    }
