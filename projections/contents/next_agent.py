"""Which agent a context read is for when it names none: the one ADK's router runs next. Pure.

ADK builds a request's contents for the agent its runner picks to answer the
next message (``Runner._find_agent_to_run``, google-adk 2.13.0): the author of
the call the user's last event answers; else the newest reply's agent (its
``transfer_to_agent`` target, or its author); else the root agent. The trail
keeps what those rules read, one live event at a time, so an answer costs O(1)
and an event O(log calls). The rules in full, and what ctxstream cannot know
without the agent tree: projections/README.md, "The agent a read is for".

Example: ``user "q"``, ``coordinator`` transfers to ``billing`` -> ``billing``;
then ``billing "done"`` -> ``billing``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PMap, pmap

from projections.contents.parts import function_calls, function_responses
from schemas.event import Event

USER: Final = "user"
"""The author of what the user (or ctxstream for the user) wrote: never an agent."""

ABORTED: Final = "INVOCATION_ABORTED"
"""The ``error_code`` of the events that seal an aborted invocation."""


@dataclass(frozen=True, slots=True)
class NextAgentTrail:
    """What ADK's router reads of the live events, kept as they come.

    Attributes:
        root: The app's root agent as configured (``""``: not configured).
        call_authors: Call id -> author of the latest live event calling it.
        answered: The author of the call the last live event, the user's,
            answers (rule 1); ``""`` when there is none or it is ``"user"``.
        replier: The agent of the newest reply (rule 2), ``""`` when none.
        sealed: The newest event not authored ``"user"`` seals an aborted
            invocation.
    """

    root: str = ""
    call_authors: PMap[str, str] = field(default_factory=pmap)
    answered: str = ""
    replier: str = ""
    sealed: bool = False


def agent_to_run(trail: NextAgentTrail) -> str:
    """The agent ADK's router would run next; ``""`` when the session names none.

    Example: user "hi", ``shop_agent`` calls ``lookup_order``, ``shop_agent``'s
    tool answers, ``shop_agent`` says "shipped", user "thanks" ->
    ``"shop_agent"``, whatever the root is.
    """
    if trail.answered and not trail.sealed:
        return trail.answered
    return trail.replier or trail.root


def note_event(trail: NextAgentTrail, event: Event) -> NextAgentTrail:
    """`trail` after one more live event. O(log calls)."""
    answered = _answered_author(trail, event)
    replier = trail.replier
    if _is_reply(event):
        replier = event.actions.transfer_to_agent or event.author
    sealed = trail.sealed if event.author == USER else event.error_code == ABORTED
    call_authors = trail.call_authors
    for call in function_calls(event):
        if call.id and call_authors.get(call.id) != event.author:
            call_authors = call_authors.set(call.id, event.author)
    return NextAgentTrail(trail.root, call_authors, answered, replier, sealed)


def trail_of(root: str, events: Iterable[Event]) -> NextAgentTrail:
    """The trail of a whole live list, stream order (what a rewind recomputes). O(n)."""
    trail = NextAgentTrail(root)
    for event in events:
        trail = note_event(trail, event)
    return trail


def _answered_author(trail: NextAgentTrail, event: Event) -> str:
    """The author of the earlier call `event` answers (rule 1), ``""`` when none applies."""
    if event.author != USER or event.error_code == ABORTED:
        return ""
    responses = function_responses(event)
    if not responses or not responses[0].id:
        return ""
    author = trail.call_authors.get(responses[0].id, "")
    return "" if author == USER else author


def _is_reply(event: Event) -> bool:
    """Whether the router's walk back stops at `event` (rule 2)."""
    actions = event.actions
    return not (
        event.author in (USER, "")
        or event.error_code == ABORTED
        or actions.agent_state is not None
        or actions.end_of_agent
        or (event.error_code and not (event.content and event.content.parts))
    )
