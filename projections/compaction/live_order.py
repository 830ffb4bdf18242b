"""Whether a session's live list is in the order that lets a decision read only its tail. Pure.

In order means, for the live events in stream order: timestamps rise strictly,
no event is scoped, invocations are contiguous, and every summary has an
invocation id of its own and a range that ends above every earlier summary's
end and below its own timestamp. An agent whose clock moves forward and the
pipeline's own summaries keep all four; one event that breaks a rule sets
:attr:`LiveOrder.ordered` to False until a rewind recomputes the live list.
The record also keeps, per call id, the first live position that names it.
Why this order lets a decision read a tail: projections/README.md, "Keeping a
decision cheap".

Example: ``inv1@100 inv1@101 inv2@102`` -> ordered; then ``inv1@103`` -> not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from pyrsistent import PMap, pmap

from schemas.event import Event


class LiveOrder(NamedTuple):
    """The order facts of a live list, kept as its events are appended.

    A named tuple: one is built per live event, and a tuple builds fastest.

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
    invocations: PMap[str, int] = pmap()
    last_summary_position: int = -1
    last_summary_end: float = 0.0
    call_positions: PMap[str, int] = pmap()


UNORDERED = LiveOrder(ordered=False)
"""The facts of a live list out of order: nothing more is kept."""


def note_live_event(order: LiveOrder, event: Event) -> LiveOrder:
    """`order` after `event` joined the live list at its end. O(log ids) per new id."""
    if not order.ordered:
        return order
    timestamp = event.timestamp
    if event.isolation_scope is not None or not timestamp > order.last_timestamp:
        return UNORDERED
    position = order.length
    invocation = event.invocation_id
    invocations = order.invocations
    summary_position, summary_end = order.last_summary_position, order.last_summary_end
    last_invocation = order.last_invocation
    actions = event.actions
    compaction = actions.compaction
    if compaction is None:
        if invocation != last_invocation:
            if invocation in invocations:
                return UNORDERED  # an earlier invocation comes back
            invocations = invocations.set(invocation, position)
            last_invocation = invocation
    else:
        start, end = compaction.start_timestamp, compaction.end_timestamp
        if invocation in invocations or not (0.0 < start <= end < timestamp and end > summary_end):
            return UNORDERED
        invocations = invocations.set(invocation, position)
        summary_position, summary_end = position, end
    positions = order.call_positions
    if event.content is not None or event.long_running_tool_ids or _requests(event):
        for call_id in call_ids_named(event):
            if call_id not in positions:
                positions = positions.set(call_id, position)
    return LiveOrder(
        True,
        position + 1,
        timestamp,
        last_invocation,
        invocations,
        summary_position,
        summary_end,
        positions,
    )


def _requests(event: Event) -> bool:
    actions = event.actions
    return bool(actions.requested_tool_confirmations or actions.requested_auth_configs)


def live_order(live: Iterable[Event]) -> LiveOrder:
    """The facts of a whole live list (after a rewind recomputed it). O(events)."""
    order = LiveOrder()
    for event in live:
        order = note_live_event(order, event)
        if not order.ordered:
            return order
    return order


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
