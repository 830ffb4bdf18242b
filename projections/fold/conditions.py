"""Conditional records: the session's writer offset and the refusals it caused. Pure.

A conditional record (``Envelope.expected_offset`` set) is applied only when
the session's last *writer* record is at that offset (``-1``: it has none);
otherwise it is refused: only ``last_offset`` moves, and its offset joins
the recent refusals. A writer record is an applied record that changes what
the session holds: not a pipeline summary, a refusal of a request, a fork,
deletion or memory record, a partial event or an equal copy. A deletion
resets the writer offset to ``-1``. The refusals are bounded: the newest
:data:`MAX_REFUSALS`, and a floor at or below which the set may miss some,
so a verdict is exact or ``None`` (unknown), never wrong. The rule in full:
projections/README.md, "Conditional records".

Example: writer offset 7; a record at 9 expecting 7 is applied (writer 9),
one at 10 expecting 7 is refused (refused ``(10,)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from schemas.keys import Offset
from schemas.logged_event import LoggedEvent

#: The writer offset of a session without a writer record (never written, or deleted).
NO_WRITER: Final = Offset(-1)
#: The most refused offsets a projection remembers.
MAX_REFUSALS: Final = 64


@dataclass(frozen=True, slots=True)
class Conditions:
    """What the fold needs to judge conditional records, and what a writer reads of its verdict.

    Attributes:
        writer_offset: Offset of the session's last writer record (``-1``: none).
        refused: The newest refused conditional records' offsets, ascending.
        refused_floor: Refusals at or below this offset may be missing from
            `refused` (``-1``: none ever was).
    """

    writer_offset: Offset = NO_WRITER
    refused: tuple[Offset, ...] = ()
    refused_floor: Offset = NO_WRITER


def is_refused(conditions: Conditions, record: LoggedEvent) -> bool:
    """Whether the fold refuses `record`: its condition names another writer offset.

    A record a fork inherited was judged on its own session, so it is never refused here.
    """
    expected = record.envelope.expected_offset
    return (
        expected is not None
        and record.origin_offset is None
        and expected != conditions.writer_offset
    )


def with_refusal(conditions: Conditions, offset: Offset) -> Conditions:
    """`conditions` after refusing the record at `offset` (the oldest refusal may go)."""
    refused = (*conditions.refused, offset)
    floor = conditions.refused_floor
    if len(refused) > MAX_REFUSALS:
        floor, refused = refused[0], refused[1:]
    return Conditions(conditions.writer_offset, refused, floor)


def with_writer(conditions: Conditions, record: LoggedEvent) -> Conditions:
    """`conditions` after applying the writer record `record` (an inherited one changes nothing)."""
    if record.origin_offset is not None:
        return conditions
    return Conditions(record.offset, conditions.refused, conditions.refused_floor)


def without_writer(conditions: Conditions) -> Conditions:
    """`conditions` after a deletion: no writer record; the refusals stay (they are facts)."""
    return Conditions(NO_WRITER, conditions.refused, conditions.refused_floor)


def refusal_verdict(conditions: Conditions, offset: int) -> bool | None:
    """Whether the record at `offset` (folded already) was refused: True, False or None (unknown).

    Example: refused ``(10,)`` over floor 4 -> 10: True; 8: False; 3: None.
    """
    if offset in conditions.refused:
        return True
    return False if offset > conditions.refused_floor else None
