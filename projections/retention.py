"""What a projection keeps once compaction has moved on: retention of the log. Pure.

A session's projection keeps its records so that a rewind can recompute the
live list and a decision can read its events; both make it O(events). In a
live list in order (:mod:`projections.live_order`) every decision reads only
the tail from :func:`~projections.decision_window.decision_start`, and that
start only moves forward while the list stays in order (the newest
summary's end and position only rise). So :func:`retained` releases the
live events before that start, the records before the first of them, their
sizes, the stored events the retry check compares with, and the covered
tool events no read of the view can ask for
(:func:`~projections.context_view.released_tools`). What stays is O(the
tail + the visible context), plus the identifiers the fold checks every new
event against (invocation ids and their first positions, call ids, the
requests live summaries answer): a few bytes per invocation and call.

Anything that needs a released event raises
:class:`~projections.retained_vector.NeedsHistory` rather than answering
from less: a rewind to a known invocation, a decision that falls back to the
whole list (the order broke, or an older event names a tail call), a
context read for another agent, branch or mode, a read of a covered call a
new response names. The caller rebuilds the projection from the session's
records on the log and applies again; the result is the one the whole
projection gives, which the retention properties check.

One rule changes with retention, by design: a re-delivered copy of an
event is recognised (reference §11.1 rule 2) while its original is held, so
an exact copy of an event from before the tail is applied as a new event.
A producer's or a client's retry follows its original within the same
invocation, which the tail always holds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from projections.compaction_config import CompactionConfig
from projections.context_view import released_tools
from projections.decision_window import decision_start
from projections.projection import SessionProjection
from projections.retained_vector import RetainedVector
from projections.session_log import SessionLog, stored_events
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent

#: Live events a release must free at least: below it, keeping them is cheaper than
#: copying the tail (a release copies what it keeps, so it runs once per this many events).
RELEASE_STEP: Final = 64


def retention_start(projection: SessionProjection, config: CompactionConfig) -> int:
    """The first live position a decision under `config` can read: 0 unless in order."""
    log = projection.log
    return decision_start(log.live, log.order, config.overlap_size or 0)


def retained(
    projection: SessionProjection, config: CompactionConfig, *, step: int = RELEASE_STEP
) -> SessionProjection:
    """`projection` without what no decision or read of its view needs any more.

    Releases only when at least `step` more live events can go; otherwise
    returns `projection` itself. O(kept events + covered tool events) when it
    releases.
    """
    log = projection.log
    cut = retention_start(projection, config)
    if cut - log.live.first < step:
        return projection
    first = log.live[cut]
    records_cut = _position(log.records, first.offset)
    records = log.records.released(records_cut)
    kept = SessionLog(
        records=records,
        live=log.live.released(cut),
        first_positions=log.first_positions,
        stored_by_id=stored_events(records.tail),
        sizes=log.sizes.released(records_cut),
        live_sizes=log.live_sizes.released(cut),
        order=log.order,
    )
    return replace(projection, log=kept, view=released_tools(projection.view, first.offset))


def released_events(projection: SessionProjection) -> int:
    """How many live events `projection` has released."""
    return projection.log.live.first


def _position(records: RetainedVector[LoggedEvent], offset: Offset) -> int:
    """The position of the held record at `offset` (records rise in offset)."""
    low, high = records.first, len(records)
    while low < high:
        middle = (low + high) // 2
        if records[middle].offset < offset:
            low = middle + 1
        else:
            high = middle
    return low
