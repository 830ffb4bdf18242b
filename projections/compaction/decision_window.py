"""The tail of a session's live list that a compaction decision reads. Pure: no I/O, no clock.

ADK's selection reads the whole live list, but in a live list in order
(:mod:`projections.compaction.live_order`) only a tail can matter, and
:func:`decision_start` says where it begins. Selecting on ``live[start:]``
chooses the very window the whole list would:

* **sliding window** (reference §4): the events before the first one newer
  than the newest summary's end are all older than that end, so no
  invocation that ends before the tail is new; invocations are contiguous
  (summaries aside, which carry ids of their own), so the tail starts on an
  invocation's first event and keeps the order of first appearance; it
  reaches ``overlap_size`` invocations behind the first new one (or the
  session's start, where the overlap is clamped anyway); the newest summary,
  whose end is the one compared with, is in the tail;
* **token threshold** (§5): the candidates are newer than the newest
  summary's end, so they are in the tail; that summary, the last in stream
  order, also has the greatest end, so it is the latest survivor in the
  tail as in the whole list and the seed is the same; the recorded count
  walks back no further than it. The estimate without a recorded count
  reads the whole contents, so without one the whole list is read;
* **size gate**: a summary before the tail ends before the tail's first
  event, so it neither covers a tail event nor sits inside a window drawn
  from the tail; with a seed, a summary inside the window ``[seed start,
  ...]`` lies inside the newest summary, which hides it, and a raw event
  before the tail and inside the window is one the newest summary covers.
  Either way it adds nothing that the tail leaves out. The newest summary
  is the gate's bar in both;
* **obligations** (§4 step 8): a call the tail opens may be answered,
  protected or requested by an event anywhere in the list; the tail is used
  only when no event before it names any call id the tail names
  (:attr:`~projections.compaction.live_order.LiveOrder.call_positions`) and the tail
  holds the newest invocation.

Cost: O(log n) to find the first new event, plus the overlap invocations
and the tail itself; the tail ends up in the window or was appended since
the newest summary, so a decision costs what the session's recent events
cost, not its history.
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
