"""The prompt-token count the token trigger reads (reference §3.6). Pure: no I/O, no clock.

The newest ``usage_metadata.prompt_token_count`` recorded since the newest
summary event, else a characters/4 estimate of the request contents ADK would
build.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from projections.contents.assembly import ContentsRequest, build_contents
from projections.event_kinds import is_summary
from schemas.event import Content, Event


def recorded_prompt_token_count(
    live: Sequence[Event], *, agent_name: str, isolation_scope: str | None
) -> int | None:
    """The newest recorded prompt-token count since the newest summary event.

    Events of other isolation scopes are ignored. Walking from the newest
    event back, the walk stops at the first summary event, surviving or not
    (deliberate ADK quirk, reference §14.17). With a non-empty `agent_name`
    only that agent's counts are read (pre-request hook); otherwise any
    author's (post-invocation hook; deliberately different, §14.10).
    """
    return newest_recorded_count(
        reversed(live), agent_name=agent_name, isolation_scope=isolation_scope
    )


def newest_recorded_count(
    newest_first: Iterable[Event], *, agent_name: str, isolation_scope: str | None
) -> int | None:
    """:func:`recorded_prompt_token_count` over live events given newest first.

    It reads only as far back as the newest count it may use or the newest
    summary event, so a caller holding the live list in a persistent vector
    walks a few events, not the session.
    """
    for event in newest_first:
        if event.isolation_scope != isolation_scope:
            continue
        if is_summary(event):
            return None
        if agent_name and event.author != agent_name:
            continue
        usage = event.usage_metadata
        if usage is not None and usage.prompt_token_count is not None:
            return usage.prompt_token_count
    return None


def _json_length(value: dict[str, Any]) -> int:
    # Python's json.dumps defaults (", " / ": " separators, ASCII escaping),
    # str() when a value is not serializable: deliberately unlike the
    # summarizer's repr rendering (reference §14.16).
    try:
        return len(json.dumps(value))
    except (TypeError, ValueError):
        return len(str(value))


def content_characters(contents: Sequence[Content]) -> int:
    """Characters the estimate counts in `contents`.

    Text of every part (thought text too, deliberately, §14.16); for a call
    its name plus the JSON of its args when non-empty; for a response its
    name plus the JSON of its response when non-empty.
    """
    total = 0
    for content in contents:
        for part in content.parts or ():
            if part.text:
                total += len(part.text)
            if part.function_call is not None:
                call = part.function_call
                total += len(call.name or "")
                if call.args:
                    total += _json_length(call.args)
            if part.function_response is not None:
                response = part.function_response
                total += len(response.name or "")
                if response.response:
                    total += _json_length(response.response)
    return total


def estimated_prompt_token_count(
    live: Sequence[Event],
    *,
    agent_name: str,
    current_branch: str | None,
    isolation_scope: str | None,
) -> int | None:
    """Characters // 4 of the default-mode contents for that agent, None when zero."""
    request = ContentsRequest(
        agent_name=agent_name, current_branch=current_branch, isolation_scope=isolation_scope
    )
    characters = content_characters(build_contents(live, request))
    return characters // 4 if characters else None


def observed_prompt_token_count(
    live: Sequence[Event],
    *,
    agent_name: str = "",
    current_branch: str | None = None,
    isolation_scope: str | None = None,
) -> int | None:
    """The prompt-token count compaction compares with ``token_threshold``.

    Example: ``user "xxxxxxxxxxxxxxxxxxxx", agent "yyyyyyyyyyyyyyyyyyyy"``
    with no recorded usage -> 40 characters // 4 = 10.

    Args:
        live: Live events (rewinds applied), stream order.
        agent_name: The current agent in the pre-request hook, ``""`` after
            an invocation.
        current_branch: The invocation branch (used by the estimate).
        isolation_scope: The hook's isolation scope.

    Returns:
        The count, or None when nothing is recorded and nothing is countable.
    """
    recorded = recorded_prompt_token_count(
        live, agent_name=agent_name, isolation_scope=isolation_scope
    )
    if recorded is not None:
        return recorded
    return estimated_prompt_token_count(
        live, agent_name=agent_name, current_branch=current_branch, isolation_scope=isolation_scope
    )
