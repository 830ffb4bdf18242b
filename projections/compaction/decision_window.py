"""The tail of a session's live list that a compaction decision reads. Pure: no I/O, no clock.

ADK's selection reads the whole live list, but in a live list in order
(:mod:`projections.compaction.live_order`) only a tail can matter:
:func:`decision_start` says where it begins (the first invocation new since the
newest summary, ``overlap_size`` invocations back), and selecting on
``live[start:]`` chooses the very window the whole list would, for the sliding
window, the token threshold, the size gate and the call obligations alike. Why
each holds: projections/README.md, "Keeping a decision cheap". Cost: O(log n)
plus the overlap invocations, so a decision costs the session's recent events.

Example: inv1, inv2, inv3, a summary over inv1..inv2, inv4 (inv3 and inv4 are
new), ``overlap_size=1`` -> the tail starts at inv2's first event.
"""

from __future__ import annotations

from projections.compaction.live_order import LiveOrder, call_ids_named
from projections.retention.retained_vector import RetainedVector
from schemas.logged_event import LoggedEvent

Live = RetainedVector[LoggedEvent]


def decision_start(live: Live, order: LiveOrder, overlap_size: int) -> int:
    """First position of `live` the decision must read: 0 unless the list is in order.

    Args:
        live: The live records, stream order.
        order: Their order facts (for exactly these records).
        overlap_size: Invocations the sliding window reaches behind the first
            new one (0 when the sliding window is off).
    """
    if not order.ordered or order.length != len(live):
        return 0
    start = _invocation_start(live, order, _first_newer(live, order.last_summary_end))
    start = _behind(live, order, start, overlap_size)
    if order.last_summary_position >= 0:
        start = min(start, order.last_summary_position)
    if start == 0 or start >= len(live) or not _self_contained(live, order, start):
        return 0
    return start


def _first_newer(live: Live, end: float) -> int:
    """The first position whose timestamp is above `end` (timestamps rise strictly).

    The search starts at the first position held: retention releases only
    events at or before the newest summary's end (:mod:`projections.retention.log_retention`).
    """
    low, high = live.first, len(live)
    while low < high:
        middle = (low + high) // 2
        if live[middle].envelope.event.timestamp > end:
            high = middle
        else:
            low = middle + 1
    return low


def _invocation_start(live: Live, order: LiveOrder, position: int) -> int:
    """Where the invocation of the first raw event at or after `position` starts.

    A raw event is one that is not a summary; `position` itself when none follows.
    """
    for index in range(position, len(live)):
        event = live[index].envelope.event
        if event.actions.compaction is None:
            return order.invocations[event.invocation_id]
    return position


def _behind(live: Live, order: LiveOrder, start: int, invocations: int) -> int:
    """The first position of the invocation `invocations` invocations before `start`.

    Only invocations the sliding window orders count: a non-empty id, on an
    event that is not a summary.
    """
    counted = 0
    while counted < invocations and start > 0:
        previous = start - 1
        while previous >= 0 and live[previous].envelope.event.actions.compaction is not None:
            previous -= 1
        if previous < 0:
            return 0
        invocation = live[previous].envelope.event.invocation_id
        start = order.invocations[invocation]
        counted += bool(invocation)
    return start


def _self_contained(live: Live, order: LiveOrder, start: int) -> bool:
    """Whether the tail from `start` holds the newest invocation and no older event names its calls.

    The newest invocation: that of an event with an id that is not a summary.
    """
    positions = order.call_positions
    newest = False
    for record in live[start:]:
        event = record.envelope.event
        if event.invocation_id and event.actions.compaction is None:
            newest = True
        if any(positions.get(call_id, start) < start for call_id in call_ids_named(event)):
            return False
    return newest
