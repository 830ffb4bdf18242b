"""The raw events a summary stands in for, a page at a time: what ``expand`` answers. Pure.

A summary covers the raw events whose timestamps lie in its range, both ends
inclusive, exactly as masking hides them
(:func:`~projections.compaction.masking.coverage`). ``expand`` lists them among
the live events, summaries left out, in stream order; the summary is the last
live event with the asked id, else :class:`SummaryMissing`. Pages are cut by
offset (a page token is the offset of the page's last event), so events a
rewind annuls meanwhile are simply not listed, and none is listed twice.

Example (offset:event@timestamp): ``0:e1@100 2:e2@101 3:S[100,101]@102
4:e3@103``; expanding ``S`` gives ``e1 e2``; with pages of one event, ``e1``
(more follow) and then, after offset 0, ``e2`` (the last page).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from projections.compaction.masking import coverage, is_covered, summary_range
from projections.event_kinds import is_summary
from schemas.logged_event import LoggedEvent


@dataclass(frozen=True, slots=True)
class CoveredPage:
    """One page of the events a summary covers.

    Attributes:
        records: The page's records, stream order.
        more: Whether covered records follow the page's last one.
    """

    records: list[LoggedEvent]
    more: bool


@dataclass(frozen=True, slots=True)
class SummaryMissing:
    """The session has no live summary with the asked id; `reason` says what it has."""

    reason: str


def covered_page(
    live: Iterable[LoggedEvent], summary_id: str, *, after: int, size: int
) -> CoveredPage | SummaryMissing:
    """The covered live records of summary `summary_id` with offsets above `after`, at most `size`.

    Args:
        live: The session's live records, stream order (a projection's
            ``log.live``, which raises ``NeedsHistory`` when it released some).
        summary_id: The summary event's id.
        after: The offset the previous page ended at (``-1``: from the start).
        size: The most records the page holds (at least 1).
    """
    records = list(live)
    named = [record.envelope.event for record in records if record.envelope.event.id == summary_id]
    summaries = [event for event in named if is_summary(event)]
    if not summaries:
        if named:
            return SummaryMissing(f"the session's event {summary_id!r} is not a summary")
        return SummaryMissing(f"the session has no live event {summary_id!r}")
    covered = coverage([summary_range(summaries[-1])])
    page: list[LoggedEvent] = []
    for record in records:
        event = record.envelope.event
        if record.offset <= after or is_summary(event) or not is_covered(event.timestamp, covered):
            continue
        if len(page) == size:
            return CoveredPage(page, more=True)
        page.append(record)
    return CoveredPage(page, more=False)
