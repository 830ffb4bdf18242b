"""The memory records a batch stores, and the ones and rows the memory plan reads back.

``memory_marks`` (migration ``0006_memory_marks.sql``) holds one row per memory record
(:mod:`schemas.memory_mark`), so a later batch knows which records of a session are
named by a later add or delete (:mod:`projections.memory.memory_marks`). Everything runs
in the batch's transaction, after the fence locked the partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from psycopg import sql

from projections.memory.memory_marks import PlacedMark
from schemas.memory_mark import MemoryAction, MemoryMark
from streams.sink.database import Connection


@dataclass(frozen=True, slots=True)
class StoredMark:
    """A memory record of a session, where it is."""

    session_key: str
    partition: int
    placed: PlacedMark


async def store_marks(conn: Connection, schema: str, marks: Sequence[StoredMark]) -> None:
    """Insert `marks` (a replayed one is already there: skipped)."""
    if not marks:
        return
    async with conn.cursor() as cursor:
        await cursor.executemany(
            sql.SQL(
                'INSERT INTO {} (partition, "offset", session_key, action, ids)'
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
            ).format(sql.Identifier(schema, "memory_marks")),
            [
                (
                    stored.partition,
                    stored.placed.offset,
                    stored.session_key,
                    stored.placed.mark.action,
                    None if stored.placed.mark.ids is None else sorted(stored.placed.mark.ids),
                )
                for stored in marks
            ],
        )


async def session_marks(
    conn: Connection, schema: str, session_keys: Iterable[str]
) -> dict[str, list[PlacedMark]]:
    """Every stored memory record of each of `session_keys`, by session."""
    keys = sorted(set(session_keys))
    if not keys:
        return {}
    cursor = await conn.execute(
        sql.SQL(
            'SELECT session_key, "offset", action, ids FROM {} WHERE session_key = ANY(%s)'
        ).format(sql.Identifier(schema, "memory_marks")),
        (keys,),
    )
    found: dict[str, list[PlacedMark]] = {}
    for session_key, offset, action, ids in await cursor.fetchall():
        mark = MemoryMark(_action(action), None if ids is None else frozenset(ids))
        found.setdefault(str(session_key), []).append(PlacedMark(int(offset), mark))
    return found


async def kept_offsets_before(
    conn: Connection, schema: str, session_key: str, offset: int, statuses: Iterable[str]
) -> list[int]:
    """The offsets of `session_key`'s rows before `offset` whose status is in `statuses`."""
    cursor = await conn.execute(
        sql.SQL(
            'SELECT "offset" FROM {} WHERE session_key = %s AND "offset" < %s'
            " AND status = ANY(%s) ORDER BY 1"
        ).format(sql.Identifier(schema, "event_rows")),
        (session_key, offset, sorted(statuses)),
    )
    return [int(row[0]) for row in await cursor.fetchall()]


def _action(value: object) -> MemoryAction:
    if value == "add":
        return "add"
    if value == "delete":
        return "delete"
    raise ValueError(f"memory_marks.action {value!r}: expected 'add' or 'delete'")
