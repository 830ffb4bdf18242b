"""Whether a kept record has a memory, given its session's memory records. Pure.

A memory record (:mod:`schemas.memory_mark`) at offset ``m`` acts on its
session's records before it: ``add`` gives them memories, ``delete`` takes
them away; with ``ids`` only those whose memory id (the event id) is named.
The rule, for a record at offset ``o`` the fold keeps:

* the memory records after it (``m > o``) that name it (no ``ids``, or its
  memory id among them): the one with the highest offset decides;
* none: the app's mode decides (``all``: a memory; ``explicit``: none).

Example (offset:record): ``0:e1 1:e2 2:add 3:delete[e1] 4:e3``, explicit mode
-> e1 none (the delete at 3 is its latest), e2 a memory (add at 2), e3 none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.memory_mark import MemoryMark


@dataclass(frozen=True, slots=True)
class PlacedMark:
    """A memory record's mark at its offset on the session's partition."""

    offset: int
    mark: MemoryMark


def names(mark: MemoryMark, memory_id: str) -> bool:
    """Whether `mark` acts on the memory `memory_id` (all of the session's, or named)."""
    return mark.ids is None or memory_id in mark.ids


def remembered(offset: int, memory_id: str, marks: Iterable[PlacedMark], *, every: bool) -> bool:
    """Whether the kept record at `offset` (memory id `memory_id`) has a memory.

    Args:
        offset: The record's offset.
        memory_id: Its memory id (:attr:`projections.memory.memory_record.Memory.memory_id`).
        marks: Memory records of its session (any order; those before it do not count).
        every: The app's mode is ``all``.
    """
    after = [placed for placed in marks if placed.offset > offset and names(placed.mark, memory_id)]
    if not after:
        return every
    return max(after, key=lambda placed: placed.offset).mark.action == "add"
