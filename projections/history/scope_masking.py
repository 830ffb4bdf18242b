"""Masking within one isolation scope, folded one live record at a time (§3.2, §3.3). Pure.

A scope keeps its surviving summaries, their coverage and its shown raw
events: the only ones a new summary can mask, since coverage only grows while
summaries are appended (a new survivor contains the ranges it supersedes). A
new summary is superseded iff a survivor contains its range and the two
ranges differ (of identical ranges the one appended last survives, §3.2);
otherwise it survives and supersedes every survivor whose range it contains.
A range with a NaN bound survives and supersedes nothing. Cost of a summary
O(survivors + shown raw events of its scope); of a raw event O(log survivors).

Example: shown ``e1@1 e2@5``, survivor ``[1,2]``; new ``[1,5]`` -> ``[1,2]``
superseded, e2 masked (e1 was masked already).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pyrsistent import PVector, pvector

from projections.compaction.masking import Coverage, coverage, is_covered
from projections.history.event_status import EventStatus

#: A summary's ``(start_timestamp, end_timestamp)``.
Range = tuple[float, float]


@dataclass(frozen=True, slots=True)
class ScopeMasking:
    """The masking of one isolation scope's live records.

    Attributes:
        survivors: (position, range) of each surviving summary, stream order.
        coverage: Union of the survivors' ranges.
        shown_raw: (position, timestamp) of each live raw event outside `coverage`.
    """

    survivors: PVector[tuple[int, Range]] = field(default_factory=pvector)
    coverage: Coverage = field(default_factory=Coverage)
    shown_raw: PVector[tuple[int, float]] = field(default_factory=pvector)


#: A status change: the position of an applied record and its new status.
Change = tuple[int, EventStatus]


def note_raw(masking: ScopeMasking, position: int, timestamp: float) -> tuple[ScopeMasking, Change]:
    """`masking` after a live raw event at `position`, and the event's status."""
    if is_covered(timestamp, masking.coverage):
        return masking, (position, EventStatus.MASKED)
    shown = masking.shown_raw.append((position, timestamp))
    return (
        ScopeMasking(masking.survivors, masking.coverage, shown),
        (position, EventStatus.LIVE),
    )


def note_summary(
    masking: ScopeMasking, position: int, summary: Range
) -> tuple[ScopeMasking, list[Change]]:
    """`masking` after a live summary at `position`: its status and every earlier change."""
    if any(_contains(kept, summary) and kept != summary for _, kept in masking.survivors):
        return masking, [(position, EventStatus.SUPERSEDED)]
    changes: list[Change] = []
    survivors: list[tuple[int, Range]] = []
    for kept_position, kept in masking.survivors:
        if _contains(summary, kept):
            changes.append((kept_position, EventStatus.SUPERSEDED))
        else:
            survivors.append((kept_position, kept))
    survivors.append((position, summary))
    covered = coverage(kept for _, kept in survivors)
    shown: list[tuple[int, float]] = []
    for raw_position, timestamp in masking.shown_raw:
        if is_covered(timestamp, covered):
            changes.append((raw_position, EventStatus.MASKED))
        else:
            shown.append((raw_position, timestamp))
    changes.append((position, EventStatus.LIVE))
    return ScopeMasking(pvector(survivors), covered, pvector(shown)), changes


def _contains(outer: Range, inner: Range) -> bool:
    """Whether `outer` contains `inner` (§3.2); a NaN bound on either side never does."""
    if any(math.isnan(bound) for bound in (*outer, *inner)):
        return False
    return outer[0] <= inner[0] and outer[1] >= inner[1]
