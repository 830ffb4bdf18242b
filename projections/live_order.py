"""Whether a session's live list is in the order that lets a decision read only its tail.

Pure: no I/O, no clock.

ADK's compaction selection reads the whole live list (reference §4, §5):
which invocations are new goes by timestamps, the size gate masks every
summary, and a call's obligations look for answers anywhere. In a session
whose live list is *in order*, everything a decision can select or weigh
lies in a short tail (:mod:`projections.decision_window`), so the decision
costs what that tail costs, not the session's history. In order means, for
the live events in stream order:

1. timestamps rise strictly (a NaN never does);
2. no event has an isolation scope;
3. invocations are contiguous: an event that is not a summary has the
   invocation id of the previous such event, or one no earlier live event
   carried (the empty id counts as an id); summaries may land anywhere,
   mid-invocation too, as the pipeline's do;
4. every summary has an invocation id no other live event carries, and
   covers ``[start, end]`` with ``0 < start <= end``, its end above every
   earlier summary's end and below its own timestamp (a summary follows what
   it summarizes).

An agent whose clock moves forward and the pipeline's own summaries (fresh
invocation ids, stamped when written) keep all four; one event that breaks a
rule sets :attr:`LiveOrder.ordered` to False for good (until a rewind
recomputes the live list), and every later decision reads the whole live
list, as before.

The record also keeps, per function-call id (calls, responses, long-running
ids, confirmation and credential requests), the first live position that
names it, so a decision can check that no event before its tail speaks of a
call its tail opens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyrsistent import PMap, pmap

from schemas.event import Event


@dataclass(frozen=True, slots=True)
class LiveOrder:
    """The order facts of a live list, kept as its events are appended.

    Attributes:
        ordered: The live list satisfies the four rules of the module doc.
        length: Live events noted.
        last_timestamp: Timestamp of the newest live event (-inf: none).
        last_invocation: Invocation id of the newest live event that is not a
            summary (None: none).
        invocations: Invocation id -> its first live position, for every id.
        last_summary_position: Live position of the newest summary (-1: none).
        last_summary_end: End timestamp of the newest summary (0.0: none).
        call_positions: Function-call id -> first live position naming it.
    """

    ordered: bool = True
    length: int = 0
    last_timestamp: float = -math.inf
    last_invocation: str | None = None
    invocations: PMap[str, int] = field(default_factory=pmap)
    last_summary_position: int = -1
    last_summary_end: float = 0.0
    call_positions: PMap[str, int] = field(default_factory=pmap)


UNORDERED = LiveOrder(ordered=False)
"""The facts of a live list out of order: nothing more is kept."""


def note_live_event(order: LiveOrder, event: Event) -> LiveOrder:
    """`order` after `event` joined the live list at its end. O(log ids) per call id."""
    if not order.ordered:
        return order
    if not _continues(order, event):
        return UNORDERED
    position = order.length
    summary_position, summary_end = order.last_summary_position, order.last_summary_end
    last_invocation = order.last_invocation
    compaction = event.actions.compaction
    if compaction is not None:
        summary_position, summary_end = position, compaction.end_timestamp
    else:
        last_invocation = event.invocation_id
    positions = order.call_positions
    for call_id in call_ids_named(event):
        if call_id not in positions:
            positions = positions.set(call_id, position)
    invocations = order.invocations
    if event.invocation_id not in invocations:
        invocations = invocations.set(event.invocation_id, position)
    return LiveOrder(
        ordered=True,
        length=position + 1,
        last_timestamp=event.timestamp,
        last_invocation=last_invocation,
        invocations=invocations,
        last_summary_position=summary_position,
        last_summary_end=summary_end,
        call_positions=positions,
    )


def live_order(live: Iterable[Event]) -> LiveOrder:
    """The facts of a whole live list (after a rewind recomputed it). O(events)."""
    order = LiveOrder()
    for event in live:
        order = note_live_event(order, event)
        if not order.ordered:
            return order
    return order


def _continues(order: LiveOrder, event: Event) -> bool:
    """Whether `event` appended to an in-order live list keeps it in order."""
    if event.isolation_scope is not None or not event.timestamp > order.last_timestamp:
        return False
    invocation = event.invocation_id
    compaction = event.actions.compaction
    if compaction is None:
        return invocation == order.last_invocation or invocation not in order.invocations
    if invocation in order.invocations:
        return False
    start, end = compaction.start_timestamp, compaction.end_timestamp
    return 0.0 < start <= end < event.timestamp and end > order.last_summary_end


def call_ids_named(event: Event) -> list[str]:
    """Every function-call id `event` names: calls, responses, long-running ids, requests."""
    named: list[str] = []
    content = event.content
    for part in (content.parts if content is not None else None) or ():
        call, response = part.function_call, part.function_response
        if call is not None and call.id:
            named.append(call.id)
        if response is not None and response.id:
            named.append(response.id)
    actions = event.actions
    named.extend(event.long_running_tool_ids or ())
    named.extend(actions.requested_tool_confirmations)
    named.extend(actions.requested_auth_configs)
    return named
