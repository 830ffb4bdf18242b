"""Which agent a context read is for when it names none: the one ADK's router runs next. Pure.

ADK builds a request's contents for one agent, the one its runner picks to
answer the next message (``Runner._find_agent_to_run``, google-adk 2.13.0),
reading the live events (rewinds applied):

1. the last event is the user's answer to a function call (its first
   function response's id, non-empty) made by an earlier event: the author
   of the latest such call event, unless that author is ``"user"`` or the
   newest event not authored ``"user"`` seals an aborted invocation
   (``error_code`` ``INVOCATION_ABORTED``). An answer the agent's own tool
   wrote is authored by the agent and goes to rule 2, as in ADK 2.13 for an
   app that is not resumable (a resumable one routes it to the caller too;
   the two differ only when that answer carries a transfer);
2. otherwise the newest *reply*, walking back: an event with an author
   other than ``"user"`` (and not empty) that seals no aborted invocation,
   carries no agent state and no end-of-agent mark, and is not a failure
   without content. Its agent is the target of its ``transfer_to_agent``
   when it has one (the target has not replied yet), else its author;
3. otherwise the app's root agent as configured (``""`` when none is).

ctxstream does not know the agent tree, so every author but ``"user"`` is
taken for an agent of the app: ADK would pass over an author its tree does
not hold, an agent that may not transfer back to its parent, and a transfer
target its author may not reach, and it maps an agent inside a task
delegation to its delegator. ctxstream's own records name no agent: summary
events are authored ``"user"`` (reference §7.3), rewinds likewise, and fork
records and refusals (author ``ctxstream``) are never live events.

The trail keeps what the rules read, folded one live event at a time, so
the answer costs O(1) and an event O(log calls): a map of call ids to
their latest caller, the agent of the newest reply, and the call author the
last event answers.
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
