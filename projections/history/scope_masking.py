"""Masking within one isolation scope, folded one live record at a time (§3.2, §3.3). Pure.

A scope keeps its surviving summaries with their coverage
(:mod:`projections.compaction.summary_chain`) and its shown raw events: the
only ones a new summary can mask, since coverage only grows while summaries
are appended, and only by the new summary's range. A new summary is
superseded iff a survivor contains its range and the two ranges differ (of
identical ranges the one appended last survives, §3.2); otherwise it survives
and supersedes every survivor whose range it contains. A range with a NaN
bound survives and supersedes nothing. Cost of a summary O(log survivors)
when it ends above every earlier one, plus a walk of the scope's shown raw
events when it widens the coverage; of a raw event O(log survivors).

Example: shown ``e1@1 e2@5``, survivor ``[1,2]``; new ``[1,5]`` -> ``[1,2]``
superseded, e2 masked (e1 was masked already).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrsistent import PVector, pvector

from projections.compaction.summary_chain import SummaryChain
from projections.history.event_status import EventStatus

#: A summary's ``(start_timestamp, end_timestamp)``.
Range = tuple[float, float]


@dataclass(frozen=True, slots=True)
class ScopeMasking:
    """The masking of one isolation scope's live records.

    Attributes:
        survivors: The position of each surviving summary, and their coverage.
        shown_raw: (position, timestamp) of each live raw event outside the coverage.
    """

    survivors: SummaryChain[int] = field(default_factory=SummaryChain)
    shown_raw: PVector[tuple[int, float]] = field(default_factory=pvector)


#: A status change: the position of an applied record and its new status.
Change = tuple[int, EventStatus]


def note_raw(masking: ScopeMasking, position: int, timestamp: float) -> tuple[ScopeMasking, Change]:
    """`masking` after a live raw event at `position`, and the event's status."""
    if masking.survivors.covers(timestamp):
        return masking, (position, EventStatus.MASKED)
    shown = masking.shown_raw.append((position, timestamp))
    return ScopeMasking(masking.survivors, shown), (position, EventStatus.LIVE)


def note_summary(
    masking: ScopeMasking, position: int, summary: Range
) -> tuple[ScopeMasking, list[Change]]:
    """`masking` after a live summary at `position`: its status and every earlier change."""
    start, end = summary
    noted = masking.survivors.noted(position, start, end)
    if not noted.survives:
        return masking, [(position, EventStatus.SUPERSEDED)]
    changes: list[Change] = [(hidden, EventStatus.SUPERSEDED) for hidden in noted.hidden]
    shown_raw = masking.shown_raw
    if not noted.chain.same_coverage(masking.survivors):  # widened by [start, end] alone
        shown: list[tuple[int, float]] = []
        for raw_position, timestamp in shown_raw:
            if start <= timestamp <= end:
                changes.append((raw_position, EventStatus.MASKED))
            else:
                shown.append((raw_position, timestamp))
        if len(shown) < len(shown_raw):
            shown_raw = pvector(shown)
    changes.append((position, EventStatus.LIVE))
    return ScopeMasking(noted.chain, shown_raw), changes
