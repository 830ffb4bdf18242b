"""What a projection keeps once compaction has moved on: retention of the log. Pure.

In a live list in order every decision reads only the tail from
:func:`~projections.compaction.decision_window.decision_start`, and that start
only moves forward. So :func:`retained` releases the records, live events,
sizes and covered tool events before it, and keeps the ids they named as
8-byte digests (:mod:`projections.retention.released_ids`): O(the tail + the
visible context) stays. Anything that needs a released event raises
:class:`~projections.retention.retained_vector.NeedsHistory` and the caller
rebuilds from the log. What asks for the history, and the one narrow rule that
changes: projections/README.md, "Retention and checkpoints".

Example: a summary over inv1..inv2, then inv3, ``overlap_size=0``: the tail
starts at inv3, so inv1..inv2's records may go (once :data:`RELEASE_STEP` live
events can); a rewind to inv1 then asks for the history.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Final, TypeVar

from pyrsistent import PMap

from projections.compaction.config import CompactionConfig
from projections.compaction.decision_window import decision_start
from projections.contents.context_view import released_tools_of
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
    # The views add the covered calls they let go: the log and the views share one set.
    views = [projection.view]
    if projection.estimate_view is not None:
        views.append(projection.estimate_view)
    view, *estimate = released_tools_of(views, first.offset, log.released.with_ids(ids))
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
        estimate_view=(
            replace(estimate[0], call_ids=estimate[0].call_ids.difference(calls))
            if estimate
            else None
        ),
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
