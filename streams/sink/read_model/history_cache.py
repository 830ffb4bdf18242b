"""The sink's cache of sessions' classification states: bounded, least recently used first out.

Each entry is a session's :class:`~projections.history.incremental.HistoryState` after its last
committed row, with the partition its rows are on. The sink reads an entry at the start of a
batch and puts the batch's states back only after the batch's transaction commits, so the cache
is never ahead of the database; entries of a partition that moved (revoked, fenced) are dropped,
since another sink may have written after them. A miss is rebuilt from the stored rows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Final

from projections.history.incremental import HistoryState

#: Sessions kept by default.
DEFAULT_CAPACITY: Final = 10_000


class HistoryCache:
    """At most `capacity` sessions' states; the least recently used is dropped first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """An empty cache of at most `capacity` (at least 1) sessions."""
        if capacity < 1:
            raise ValueError(f"a history cache holds at least one session, not {capacity}")
        self._capacity = capacity
        self._entries: OrderedDict[str, tuple[int, HistoryState]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, session_key: str, partition: int) -> HistoryState | None:
        """The state of `session_key` on `partition`, None when not cached (or elsewhere)."""
        entry = self._entries.get(session_key)
        if entry is None or entry[0] != partition:
            return None
        self._entries.move_to_end(session_key)
        return entry[1]

    def put_all(self, states: Mapping[str, tuple[int, HistoryState]]) -> None:
        """Keep each session's (partition, state) of a committed batch."""
        for session_key, entry in states.items():
            self._entries[session_key] = entry
            self._entries.move_to_end(session_key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def drop_partitions(self, partitions: Iterable[int]) -> None:
        """Forget every session of `partitions` (revoked, or written by another sink)."""
        gone = set(partitions)
        for session_key in [k for k, (p, _) in self._entries.items() if p in gone]:
            del self._entries[session_key]

    def clear(self) -> None:
        """Forget every session (a batch failed in a way that says nothing of where)."""
        self._entries.clear()
