"""The default summarizer's transcript, prompt and summary event (reference §7).

Pure: no I/O, no clock. The summary event's fresh id, invocation id and
timestamp are arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from projections.event_kinds import is_summary
from schemas.event import (
    Content,
    Event,
    EventActions,
    EventCompaction,
    Part,
    UsageMetadata,
)

#: Longest rendered tool argument/result string kept whole.
MAX_RENDERED_CHARS: Final = 2000

AUTH_FUNCTION_NAME: Final = "adk_request_credential"

#: Our own wording of the default prompt's intent; the history goes last.
DEFAULT_PROMPT_TEMPLATE: Final = (
    "Below is a conversation between a user and an AI agent. It may begin with a "
    "summary of an earlier part of the same conversation.\n"
    "Write a concise summary that replaces it. Start with a line naming the "
    "conversation language (the user's primary language). Then restate what the "
    "user asked for, the relevant context, key decisions, information obtained and "
    "open questions or tasks. List the exact names of the tools the agent called.\n"
    "\n"
    "{conversation_history}"
)


def truncate(text: str, limit: int = MAX_RENDERED_CHARS) -> str:
    """`text`, cut to `limit` characters plus a note of how many were dropped.

    Example: 2001 characters -> the first 2000 + ``"... [truncated 1 chars]"``;
    exactly 2000 are kept whole.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated {len(text) - limit} chars]"


def _is_auth_event(parts: Sequence[Part]) -> bool:
    for part in parts:
        call, response = part.function_call, part.function_response
        if call is not None and call.name == AUTH_FUNCTION_NAME:
            return True
        if response is not None and response.name == AUTH_FUNCTION_NAME:
            return True
    return False


def _repr(value: dict[str, Any] | None) -> str:
    # Python str() of the dict: single quotes, insertion order, "None".
    return truncate(str(value))


def _part_lines(event: Event, part: Part) -> list[str]:
    lines: list[str] = []
    author = event.author
    if part.thought:
        if part.text and not is_summary(event):
            lines.append(f"{author} (thought): {part.text}")
    elif part.text:
        lines.append(f"{author}: {part.text}")
    if part.function_call is not None:
        call = part.function_call
        lines.append(f"{author} called tool: {call.name}({_repr(call.args)})")
    if part.function_response is not None:
        response = part.function_response
        lines.append(f"Tool response from {response.name}: {_repr(response.response)}")
    return lines


def render_transcript(events: Sequence[Event]) -> str:
    """The conversation history the default summarizer puts into its prompt.

    One line per rendered part, joined with newlines: ``"<author>: <text>"``,
    ``"<author> (thought): <text>"`` (not for summary events),
    ``"<author> called tool: <name>(<args>)"`` and
    ``"Tool response from <name>: <response>"`` (args/response as Python
    ``str()`` of the dict, truncated at 2000 characters). Events without parts
    and credential-request traffic are skipped; text is used verbatim.

    Example: ``user "Plan my day"``, then a call ``get_calendar(day="mon")``
    by ``planner`` -> two lines, ``user: Plan my day`` and
    ``planner called tool: get_calendar({'day': 'mon'})``.
    """
    lines: list[str] = []
    for event in events:
        parts = event.content.parts if event.content is not None else None
        if not parts or _is_auth_event(parts):
            continue
        for part in parts:
            lines.extend(_part_lines(event, part))
    return "\n".join(lines)


def build_prompt(history: str, template: str = DEFAULT_PROMPT_TEMPLATE) -> str:
    """The summarizer prompt: `template` with the history substituted."""
    return template.replace("{conversation_history}", history)


def summary_event(
    window: Sequence[Event],
    summary: str | Content | None,
    *,
    event_id: str,
    invocation_id: str,
    timestamp: float,
    usage_metadata: UsageMetadata | None = None,
    isolation_scope: str | None = None,
) -> Event | None:
    """The summary event ADK's default summarizer returns for `window`.

    Authored ``"user"``, no ``content``; ``actions.compaction`` spans the
    timestamps of the first and last window items (positions, not min/max:
    deliberately reproduces ADK's possibly inverted ranges, reference §14.4)
    and holds the summary with role forced to ``model``.

    Args:
        window: The events handed to the summarizer (seed first if any).
        summary: The model's summary text or content; None = the model
            returned no content.
        event_id: Fresh event id.
        invocation_id: Fresh invocation id.
        timestamp: Creation time.
        usage_metadata: Usage of the summarizer call, passed through.
        isolation_scope: The pre-request hook's scope (None after an
            invocation).

    Returns:
        The event, or None for an empty window or no summary.
    """
    if not window or summary is None:
        return None
    if isinstance(summary, str):
        content = Content(role="model", parts=[Part(text=summary)])
    else:
        content = summary.model_copy(update={"role": "model"})
    compaction = EventCompaction(
        start_timestamp=window[0].timestamp,
        end_timestamp=window[-1].timestamp,
        compacted_content=content,
    )
    return Event(
        id=event_id,
        invocation_id=invocation_id,
        author="user",
        isolation_scope=isolation_scope,
        timestamp=timestamp,
        usage_metadata=usage_metadata,
        actions=EventActions(compaction=compaction),
    )
