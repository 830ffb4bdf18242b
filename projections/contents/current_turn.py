"""Find where the current turn starts for ``include_contents="none"`` (reference §9). Pure.

An agent that sees only the current turn gets the default assembly of the
events from the turn start to the end. The turn start is searched in the
**raw** stream, before rewinds are applied.

Deliberate ADK quirks (reference §14.5, §14.6): a rewound user message can be
the anchor, and the slice then rewinds to nothing; a summary event appended
after the user message is authored ``"user"`` and becomes the anchor, so the
real user message before it is lost.

Needs global context: the search walks back from the newest event, tracking
the calls still owed to results the client posted back.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.contents.contents_request import ContentsRequest
from projections.contents.other_agents import USER, is_other_agent_reply
from projections.contents.parts import function_calls, function_responses, has_function_responses
from projections.contents.visibility import is_included, recorded_call_ids
from schemas.event import Event

TRANSFER_FUNCTION_NAME = "transfer_to_agent"


def is_submitted_tool_result(event: Event) -> bool:
    """Whether `event` is a tool result the client posted back (user-authored responses)."""
    return event.author == USER and has_function_responses(event)


def is_transfer(event: Event) -> bool:
    """Whether `event` hands control to another agent (action or call)."""
    return bool(event.actions.transfer_to_agent) or any(
        call.name == TRANSFER_FUNCTION_NAME for call in function_calls(event)
    )


def can_start_turn(event: Event, request: ContentsRequest, call_ids: frozenset[str]) -> bool:
    """Whether `event` may anchor the current turn (ignoring owed calls).

    Per-event test: it passes the inclusion rules (reference §8.2, which
    include the tool-progress rule), comes from the user or another agent, is
    no transfer and no posted-back tool result. `request` must have
    ``include_thoughts_from_other_agents`` off.
    """
    return (
        (event.author == USER or is_other_agent_reply(event, request.agent_name))
        and not is_transfer(event)
        and not is_submitted_tool_result(event)
        and is_included(event, request, call_ids)
    )


def find_turn_start(events: Sequence[Event], request: ContentsRequest) -> int | None:
    """Position in the raw `events` where the current turn starts, None if nowhere.

    Walking from the newest event back: an event's calls are first removed
    from the owed set; a posted-back tool result then adds its response ids
    that answer some call recorded in `events`. The start is the first event
    met with nothing owed that :func:`can_start_turn`.

    Example: ``u1, "approve?" u2, call lr1, interim lr1, u3, reply, posted lr1``
    -> the position of ``u2``: the posted result owes ``lr1`` until its call.
    """
    # Deliberately the raw stream, rewinds not applied (ADK quirk, §14.6); and a
    # summary event, authored "user", is a valid anchor (ADK quirk, §14.5).
    call_ids = recorded_call_ids(events)
    owed: set[str] = set()
    for position in range(len(events) - 1, -1, -1):
        event = events[position]
        owed.difference_update(call.id for call in function_calls(event) if call.id)
        if is_submitted_tool_result(event):
            owed.update(r.id for r in function_responses(event) if r.id and r.id in call_ids)
        if not owed and can_start_turn(event, request, call_ids):
            return position
    return None
