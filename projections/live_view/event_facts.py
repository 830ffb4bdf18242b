"""What the live view's rules read of one event. Pure: no I/O, no clock.

Each predicate is the event-level half of an ADK 2.13.0 reader the live view must
keep equal (``_get_contents``, the router, the compaction selections): the ids an
event names, whether a summary hides an event from every reader that sees it,
whether an event starts the current turn for every reader of its scope, and the
class an agent reply falls in for the router. Rules: projections/live_view/README.md.

Example: a user text without branch is a turn start for its scope; a summary on
branch ``a`` hides an event on ``a.b`` but not one without branch.
"""

from __future__ import annotations

from projections.contents.current_turn import is_submitted_tool_result, is_transfer
from projections.contents.parts import function_calls, function_responses
from projections.contents.visibility import (
    branch_call_refs,
    branch_segments,
    is_empty,
    is_hidden_traffic,
)
from schemas.event import Event

USER = "user"
ABORTED = "INVOCATION_ABORTED"
#: Calls that are interrupts even without ``long_running_tool_ids`` (ADK's legacy shapes).
INTERRUPT_CALL_NAMES = frozenset({"adk_request_input", "adk_request_credential"})


def named_ids(event: Event) -> set[str]:
    """Every call id `event` names: calls, responses, long-running ids, requests, branch refs."""
    names = {call.id for call in function_calls(event) if call.id}
    names |= {response.id for response in function_responses(event) if response.id}
    names |= set(event.long_running_tool_ids or ())
    names |= set(event.actions.requested_tool_confirmations)
    names |= set(event.actions.requested_auth_configs)
    names |= set(branch_call_refs(event))
    return names


def call_ids(event: Event) -> set[str]:
    """The non-empty ids of `event`'s function calls."""
    return {call.id for call in function_calls(event) if call.id}


def response_ids(event: Event) -> set[str]:
    """The non-empty ids of `event`'s function responses."""
    return {response.id for response in function_responses(event) if response.id}


def task_call_ids(event: Event) -> set[str]:
    """Ids of calls with arguments: a task agent scoped by one reads them as its input."""
    return {call.id for call in function_calls(event) if call.id and call.args}


def is_masking_summary(event: Event) -> bool:
    """Whether `event` is a summary every reader of its branch and scope includes.

    A summary authored by the user on a workflow node path is hidden from
    readers on other nodes, and one whose own content carries framework traffic
    is dropped whole: neither may stand in for what it covers.
    """
    compaction = event.actions.compaction
    if compaction is None or compaction.start_timestamp > compaction.end_timestamp:
        return False
    if event.author == USER and event.node_info.path and not function_responses(event):
        return False
    return not is_hidden_traffic(event)


def branch_within(inner: str | None, outer: str | None) -> bool:
    """Whether every reader that sees an event on `inner` sees one on `outer`.

    True when `outer` is empty, or `inner` is `outer` or below it.
    """
    if not outer:
        return True
    if not inner:
        return False
    own, base = branch_segments(inner), branch_segments(outer)
    return len(own) >= len(base) and own[: len(base)] == base


def hides(summary: Event, event: Event) -> bool:
    """Whether masking `summary` hides `event` from every reader that includes `event`."""
    compaction = summary.actions.compaction
    return (
        compaction is not None
        and summary.isolation_scope == event.isolation_scope
        and compaction.start_timestamp <= event.timestamp <= compaction.end_timestamp
        and branch_within(event.branch, summary.branch)
    )


def subsumes(later: Event, earlier: Event, *, later_after: bool) -> bool:
    """Whether summary `later` makes `earlier` a subsumed summary for every reader of it."""
    outer, inner = later.actions.compaction, earlier.actions.compaction
    if outer is None or inner is None or later.isolation_scope != earlier.isolation_scope:
        return False
    same = (outer.start_timestamp, outer.end_timestamp) == (
        inner.start_timestamp,
        inner.end_timestamp,
    )
    contains = outer.start_timestamp <= inner.start_timestamp and (
        inner.end_timestamp <= outer.end_timestamp
    )
    return contains and (later_after or not same) and branch_within(earlier.branch, later.branch)


def is_turn_start(event: Event) -> bool:
    """Whether `event` anchors the current turn for every reader of its isolation scope.

    A user message on no branch and no workflow node, with something to show,
    no framework traffic, no transfer and no posted-back tool result.
    """
    return (
        event.author == USER
        and not event.branch
        and not event.node_info.path
        and not is_empty(event, include_thoughts=False)
        and not is_hidden_traffic(event)
        and not is_transfer(event)
        and not is_submitted_tool_result(event)
    )


def is_agent_reply(event: Event) -> bool:
    """Whether ADK's router may take `event` for the agent that replied last."""
    if event.author == USER or event.error_code == ABORTED:
        return False
    if event.actions.agent_state is not None or event.actions.end_of_agent:
        return False
    has_parts = event.content is not None and bool(event.content.parts)
    return not (event.error_code and not has_parts)
