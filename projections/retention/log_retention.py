"""What a projection keeps once compaction has moved on: retention of the log. Pure.

A session's projection keeps its records so that a rewind can recompute the
live list and a decision can read its events; both make it O(events). In a
live list in order (:mod:`projections.compaction.live_order`) every decision reads only
the tail from :func:`~projections.compaction.decision_window.decision_start`, and that
start only moves forward while the list stays in order (the newest
summary's end and position only rise). So :func:`retained` releases the
live events before that start, the records before the first of them, their
sizes, the stored events the retry check compares with, and the covered
tool events no read of the view can ask for
(:func:`~projections.contents.context_view.released_tools`); the maps keyed by the
ids those events named (invocations and their first positions, call ids,
the requests their summaries answer) lose those entries, and the ids are
kept as 8-byte digests (:mod:`projections.retention.released_ids`). What stays is
O(the tail + the visible context) plus 8 bytes per released id.

Anything that needs a released event raises
:class:`~projections.retention.retained_vector.NeedsHistory` rather than answering
from less: an event that names a released id (:mod:`projections.retention.release_guard`:
an invocation or call id used again, a rewind to a released invocation, a
duplicate summary of a released one, a late answer to a compacted call), an
event that breaks the order, a rewind to a held invocation (the live list is
recomputed from every record), a decision that falls back to the whole list,
a context read for another agent, branch or mode. The caller rebuilds the
projection from the session's records on the log and applies again; the
result is the one the whole projection gives, which the retention properties
check.

One rule changes with retention, narrowly: an exact copy of a released event
is recognised as a retry (reference §11.1 rule 2) because it names its
released invocation, and so asks for the history, unless its invocation id
is empty and it names no call: such a copy is folded as a new event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Final, TypeVar

from pyrsistent import PMap

from projections.compaction.config import CompactionConfig
from projections.compaction.decision_window import decision_start
from projections.contents.context_view import released_tools
from projections.fold.invocations import released_invocations
from projections.fold.projection import SessionProjection
from projections.fold.session_log import SessionLog, stored_events
from projections.retention.release_guard import named_ids
from projections.retention.released_ids import Kind
from projections.retention.retained_vector import RetainedVector
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent

V = TypeVar("V")

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
    returns `projection` itself. O(kept events + covered tool events +
    released ids) when it releases.
    """
    log = projection.log
    cut = retention_start(projection, config)
    if cut - log.live.first < step:
        return projection
    first = log.live[cut]
    records_cut = _position(log.records, first.offset)
    gone = log.records[log.records.first : records_cut]
    records = log.records.released(records_cut)
    held = _named(records.tail)
    ids = _named(gone) - held
    # The view adds the covered calls it lets go: the log and the view share one set.
    view = released_tools(projection.view, first.offset, log.released.with_ids(ids))
    invocations = {value for kind, value in ids if kind == "invocation"}
    calls = {value for kind, value in ids if kind == "call"}
    requests = {value for kind, value in ids if kind == "request"}
    order = log.order
    kept = SessionLog(
        records=records,
        live=log.live.released(cut),
        first_positions=_without(log.first_positions, invocations),
        stored_by_id=stored_events(records.tail),
        sizes=log.sizes.released(records_cut),
        live_sizes=log.live_sizes.released(cut),
        order=order._replace(
            invocations=_without(order.invocations, invocations),
            call_positions=_without(order.call_positions, calls),
        ),
        released=view.released,
    )
    summaries = projection.summaries
    return replace(
        projection,
        log=kept,
        invocations=released_invocations(projection.invocations, invocations),
        summaries=replace(summaries, request_ids=_without(summaries.request_ids, requests)),
        view=replace(view, call_ids=view.call_ids.difference(calls)),
    )


def _named(records: Iterable[LoggedEvent]) -> set[tuple[Kind, str]]:
    """Every id the events of `records` name, with its kind."""
    return {named for record in records for named in named_ids(record.envelope.event)}


def _without(entries: PMap[str, V], keys: set[str]) -> PMap[str, V]:
    """`entries` without `keys`."""
    if not keys:
        return entries
    kept = entries.evolver()
    for key in keys:
        if key in entries:
            del kept[key]
    return kept.persistent()


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
