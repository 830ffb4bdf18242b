"""Which earlier events a summary hides from every reader that sees them, indexed. Pure.

A summary on branch ``b`` (or on none) of scope ``x`` hides an event of scope
``x`` whose branch is ``b`` or below it, when the event's timestamp lies in its
range; a summary is subsumed for every reader when such a summary contains its
range (a later one, for the same range), as ADK's ``_get_compaction_ranges``
orders them. Summaries are grouped by (scope, branch): an event looks up the
groups of its branch's ancestors, each a bisection. Cost O(s log s) to build
for s summaries, O(depth * log s) per event.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from projections.contents.visibility import branch_segments
from projections.live_view import event_facts as facts
from schemas.event import Event

#: A summary's sort key, as ADK orders ranges: start, then the wider, then the later.
Key = tuple[float, float, int]


@dataclass(slots=True)
class _Group:
    """The summaries of one (scope, branch): merged coverage and ranges by key."""

    ranges: list[tuple[float, float, int]] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    max_end: list[float] = field(default_factory=list)

    def build(self) -> None:
        merged: list[tuple[float, float]] = []
        for start, end, _ in sorted(self.ranges):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self.starts = [start for start, _ in merged]
        self.ends = [end for _, end in merged]
        ordered = sorted((start, -end, -position) for start, end, position in self.ranges)
        self.keys = ordered
        running = float("-inf")
        for _, negative_end, _ in ordered:
            running = max(running, -negative_end)
            self.max_end.append(running)

    def covers(self, timestamp: float) -> bool:
        index = bisect_right(self.starts, timestamp) - 1
        return index >= 0 and timestamp <= self.ends[index]

    def contains(self, key: Key, end: float) -> bool:
        """Whether a range sorted before `key` reaches `end` (so it contains that range)."""
        index = bisect_left(self.keys, key)
        return index > 0 and self.max_end[index - 1] >= end


class Hiding:
    """The live masking summaries of a session, grouped for lookups."""

    def __init__(self, events: Sequence[Event], positions: Sequence[int]) -> None:
        """Index the summaries at `positions` of `events` that every reader includes."""
        self._groups: dict[tuple[str | None, str], _Group] = {}
        for position in positions:
            event = events[position]
            compaction = event.actions.compaction
            if compaction is None or not facts.is_masking_summary(event):
                continue
            group = self._groups.setdefault((event.isolation_scope, event.branch or ""), _Group())
            group.ranges.append((compaction.start_timestamp, compaction.end_timestamp, position))
        for group in self._groups.values():
            group.build()

    def _around(self, event: Event) -> list[_Group]:
        segments = branch_segments(event.branch)
        branches = [".".join(segments[:depth]) for depth in range(len(segments) + 1)]
        found = (self._groups.get((event.isolation_scope, branch)) for branch in branches)
        return [group for group in found if group is not None]

    def hides(self, event: Event) -> bool:
        """Whether a summary hides the raw `event` from every reader that sees it."""
        return any(group.covers(event.timestamp) for group in self._around(event))

    def subsumes(self, event: Event, position: int) -> bool:
        """Whether the summary `event` at `position` is subsumed for every reader of it."""
        compaction = event.actions.compaction
        if compaction is None:
            return False
        key = (compaction.start_timestamp, -compaction.end_timestamp, -position)
        end = compaction.end_timestamp
        return any(group.contains(key, end) for group in self._around(event))
