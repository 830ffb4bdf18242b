"""Conformance runner for ``summarizer_render`` vectors (§7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.compaction.render import build_prompt, render_transcript, summary_event
from schemas.event import Event, UsageMetadata

#: The recording's summarizer was a fake LLM; its text is not recorded.
PLACEHOLDER_SUMMARY = "Summary of the conversation."


def _fresh_invocation_id(events: list[Event]) -> str:
    used = {event.invocation_id for event in events}
    candidate = "summary-invocation"
    while candidate in used:
        candidate += "-1"
    return candidate


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """The transcript, prompt check and summary event shape for one window."""
    events = [Event.model_validate(event) for event in vector_input["events"]]
    history = render_transcript(events)
    llm_called = bool(events)  # an empty window never reaches the model
    usage = UsageMetadata(prompt_token_count=len(history), candidates_token_count=7)
    invocation_id = _fresh_invocation_id(events)
    summary = summary_event(
        events,
        PLACEHOLDER_SUMMARY if llm_called else None,
        event_id="summary",
        invocation_id=invocation_id,
        timestamp=max((event.timestamp for event in events), default=0.0) + 1.0,
        usage_metadata=usage,
    )
    shape: dict[str, Any] | None = None
    if summary is not None and summary.actions.compaction is not None:
        compaction = summary.actions.compaction
        shape = {
            "author": summary.author,
            "content_is_null": summary.content is None,
            "invocation_id_is_fresh": all(e.invocation_id != summary.invocation_id for e in events),
            "start_timestamp": compaction.start_timestamp,
            "end_timestamp": compaction.end_timestamp,
            "compacted_content_role": compaction.compacted_content.role,
            "usage_metadata_passed_through": summary.usage_metadata == usage,
        }
    return {
        "conversation_history": history,
        "llm_called": llm_called,
        # No prompt is built when the model is not called (an empty window).
        "prompt_ends_with_history": (
            build_prompt(history).endswith("\n\n" + history) if llm_called else None
        ),
        "summary_event": shape,
    }
