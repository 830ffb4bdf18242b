"""Decide which live events an agent's request may include (reference §8.2). Pure: no I/O.

Every rule here is a per-event decision: scope, workflow user input, emptiness,
branch, framework/auth/confirmation traffic and tool progress. Only the tool
progress rule needs context beyond the event itself, the set of call ids
recorded in the live events (:func:`recorded_call_ids`), which an incremental
projection can keep as it goes. Partial (streaming) events are deliberately
not filtered here, as in ADK (reference §1.3, §14.7).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

from projections.contents.contents_request import ContentsRequest
from projections.contents.other_agents import USER, is_other_agent_reply
from projections.contents.parts import function_calls, has_function_responses, parts_of
from projections.event_kinds import is_summary
from schemas.event import Event, Part

# Function names whose calls and responses never reach a model (reference §1.5):
# an event holding any of them is dropped whole.
HIDDEN_FUNCTION_NAMES: Final = frozenset(
    {"adk_framework", "adk_request_credential", "adk_request_confirmation"}
)


def recorded_call_ids(events: Iterable[Event]) -> frozenset[str]:
    """Every non-empty function call id in `events` (global context for rule 6)."""
    return frozenset(call.id for event in events for call in function_calls(event) if call.id)


def is_part_visible(part: Part, *, include_thoughts: bool) -> bool:
    """Whether `part` gives its event something to show the model.

    Calls, responses, thought signatures and server-side tool traffic always
    do; otherwise a part needs non-empty text, inline data, file data,
    executable code or a code execution result, and must not be a thought
    that is being hidden.
    """
    if part.function_call is not None or part.function_response is not None:
        return True
    if part.thought_signature:
        return True
    if part.tool_call is not None or part.tool_response is not None:
        return True
    if part.thought and not include_thoughts:
        return False
    return bool(
        part.text
        or part.inline_data is not None
        or part.file_data is not None
        or part.executable_code is not None
        or part.code_execution_result is not None
    )


def is_empty(event: Event, *, include_thoughts: bool) -> bool:
    """Whether `event` has nothing to show: no visible part and no transcription.

    Summary events are never empty. A content without role or parts counts as
    no content, so state-only events, ``parts: []``, role-less contents and
    thought-only events (with thoughts hidden) are empty.
    """
    if is_summary(event):
        return False
    content = event.content
    no_content = (
        content is None
        or not content.role
        or not content.parts
        or not any(is_part_visible(p, include_thoughts=include_thoughts) for p in content.parts)
    )
    return no_content and event.input_transcription is None and event.output_transcription is None


def branch_segments(branch: str | None) -> list[str]:
    """The dot-separated segments of `branch`, ``[]`` for None or ``""``."""
    return branch.split(".") if branch else []


def branch_call_refs(event: Event) -> list[str]:
    """Ids named by ``<name>@<id>`` segments of the event's branch.

    The id follows a segment's last ``@``, as :func:`is_tool_progress` reads
    it: in ``wf@tool@c1`` the id is ``c1``.
    """
    if not event.branch or "@" not in event.branch:
        return []
    refs: list[str] = []
    for segment in branch_segments(event.branch):
        _name, at, ref = segment.rpartition("@")
        if at and ref:
            refs.append(ref)
    return refs


def is_on_visible_branch(event: Event, current_branch: str | None) -> bool:
    """Whether `event`'s branch is visible from `current_branch`.

    Visible when either branch is empty, when both are equal, or when the
    current branch is a strict descendant of the event's. Branches compare by
    whole segments, so ``a.child000`` does not see ``a.child`` (a plain string
    prefix test would), and siblings and descendants are hidden.
    """
    if not current_branch or not event.branch:
        return True
    current = branch_segments(current_branch)
    own = branch_segments(event.branch)
    return len(own) <= len(current) and current[: len(own)] == own


def is_hidden_traffic(event: Event) -> bool:
    """Whether `event` carries framework, auth or confirmation calls or responses."""
    for part in parts_of(event):
        if part.function_call is not None and part.function_call.name in HIDDEN_FUNCTION_NAMES:
            return True
        if (
            part.function_response is not None
            and part.function_response.name in HIDDEN_FUNCTION_NAMES
        ):
            return True
    return False


def is_workflow_user_input(event: Event, node_path: str = "") -> bool:
    """Whether `event` is user input addressed to another workflow node.

    A user event without function responses whose non-empty node path differs
    from the current node path (`node_path`, ``""`` outside workflows).
    """
    path = event.node_info.path
    # The cheap tests first: outside workflows the path is empty.
    return (
        bool(path)
        and path != node_path
        and event.author == USER
        and not has_function_responses(event)
    )


def is_tool_progress(
    event: Event, current_branch: str | None, agent_name: str, call_ids: Collection[str]
) -> bool:
    """Whether `event` is progress a tool published below the current branch.

    True when the event's branch lies strictly below `current_branch` (every
    branch lies below an empty one) and one of the segments past the current
    branch is ``<name>@<id>`` (split at its last ``@``) with ``<id>`` in
    `call_ids` and ``<name>`` other than `agent_name`.

    Example, current branch ``agent``, call ``adk-w1`` recorded:
    ``agent.wf_tool@adk-w1`` and ``agent.wf_tool@adk-w1.inner`` are progress;
    ``agent.wf@1`` is not (``1`` is no call id).
    """
    if not event.branch:
        return False  # no segment lies below any branch
    current = branch_segments(current_branch)
    own = branch_segments(event.branch)
    if len(own) <= len(current) or own[: len(current)] != current:
        return False
    for segment in own[len(current) :]:
        # The id follows the last "@": in ``wf@tool@c1`` the name is ``wf@tool``.
        name, at, call_id = segment.rpartition("@")
        if at and call_id in call_ids and name != agent_name:
            return True
    return False


def is_included(event: Event, request: ContentsRequest, call_ids: Collection[str]) -> bool:
    """Whether `event` passes every inclusion rule of reference §8.2.

    Per-event step; `call_ids` is the global context of the tool-progress rule
    (:func:`recorded_call_ids` of the live events). Thoughts count as visible
    only in another agent's reply and only when the request's
    ``include_thoughts_from_other_agents`` is on. The current workflow node
    path is ``""``: requests are built outside workflow nodes.
    """
    # No test of `event.partial`: ADK deliberately keeps streaming chunks here
    # (reference §14.7); the session service is what keeps them out.
    if event.isolation_scope != request.isolation_scope:
        return False
    if is_workflow_user_input(event):
        return False
    include_thoughts = request.include_thoughts_from_other_agents and is_other_agent_reply(
        event, request.agent_name
    )
    if is_empty(event, include_thoughts=include_thoughts):
        return False
    if not is_on_visible_branch(event, request.current_branch):
        return False
    if is_hidden_traffic(event):
        return False
    return not is_tool_progress(event, request.current_branch, request.agent_name, call_ids)
