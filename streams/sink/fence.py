"""The fenced batch transaction: a batch's rows and its partitions' offsets, committed together.

One database transaction per batch: lock the partitions' ``sink_offsets`` rows (created at 0
when missing), check that each stored next offset is where the batch starts (else
:class:`~streams.sink.errors.FenceError`, nothing written), ``COPY`` the rows, store the
consumer's position after the batch, commit. ``streams/sink/README.md``, "The fence".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from psycopg import sql

from streams.sink.database import Connection
from streams.sink.errors import FenceError
from streams.sink.rows import COLUMNS, EventRow


class RowsStep(Protocol):
    """What a batch writes with its rows, inside the fenced transaction."""

    async def before_rows(self, conn: Connection, schema: str) -> Sequence[EventRow]:
        """The rows to copy (the batch's, completed), after the fence check."""

    async def after_rows(self, conn: Connection, schema: str) -> None:
        """What else to write once the rows are in, before the offsets move."""


@dataclass(frozen=True, slots=True)
class Batch:
    """What one fetch brought: per partition, the position fetched from and the one after.

    ``ends[p]`` is the consumer's position after the batch, which is past transaction
    markers and aborted records: never ``starts[p]`` plus a count of rows.
    """

    topic: str
    starts: Mapping[int, int]
    ends: Mapping[int, int]
    rows: Sequence[EventRow]

    def check(self) -> None:
        """Refuse a batch whose rows or ends fall outside its partitions' ranges.

        Raises:
            FenceError: a partition's end is before its start, or a row is not in
                ``[starts[p], ends[p])`` of its partition (the consumer was moved while it
                fetched); the error stores no offsets, the next batch's fence says where.
        """
        inside = self.starts.keys() == self.ends.keys() and all(
            self.starts[p] <= self.ends[p] for p in self.starts
        )
        inside = inside and all(
            row.partition in self.starts
            and self.starts[row.partition] <= row.offset < self.ends[row.partition]
            for row in self.rows
        )
        if not inside:
            raise FenceError(
                self.topic, {}, self.starts, "records outside the positions fetched from and to"
            )


async def write_batch(
    conn: Connection, schema: str, batch: Batch, step: RowsStep | None = None
) -> None:
    """Write `batch` into `schema` in one transaction, fenced by the stored offsets.

    `step`, when given, completes the rows before they are copied and writes what goes with
    them after (the statuses and memories: :mod:`streams.sink.read_model.status_step`), in the same
    transaction.

    Raises:
        FenceError: a partition's stored next offset is not the batch's start (another
            sink, or this one's earlier run, went past it); nothing was written.
    """
    batch.check()
    partitions = sorted(batch.starts)
    if not partitions:
        return
    async with conn.transaction():
        stored = await lock_offsets(conn, schema, batch.topic, partitions)
        if any(stored[p] != batch.starts[p] for p in partitions):
            raise FenceError(batch.topic, stored, batch.starts)
        rows = batch.rows if step is None else await step.before_rows(conn, schema)
        await copy_rows(conn, schema, rows)
        if step is not None:
            await step.after_rows(conn, schema)
        await conn.execute(
            sql.SQL(
                "UPDATE {} AS o SET next_offset = n.next_offset"
                " FROM unnest(%s::integer[], %s::bigint[]) AS n(partition, next_offset)"
                " WHERE o.topic = %s AND o.partition = n.partition"
            ).format(sql.Identifier(schema, "sink_offsets")),
            (partitions, [batch.ends[p] for p in partitions], batch.topic),
        )


async def lock_offsets(
    conn: Connection, schema: str, topic: str, partitions: Sequence[int]
) -> dict[int, int]:
    """Lock the partitions' offset rows (inserted at 0 when missing); their next offsets.

    Runs inside the caller's transaction. Partitions are taken in ascending order, so two
    transactions over overlapping partitions queue instead of deadlocking.
    """
    table = sql.Identifier(schema, "sink_offsets")
    ordered = sorted(partitions)
    await conn.execute(
        sql.SQL(
            "INSERT INTO {} (topic, partition, next_offset)"
            " SELECT %s, p, 0 FROM unnest(%s::integer[]) AS p ORDER BY p"
            " ON CONFLICT (topic, partition) DO NOTHING"
        ).format(table),
        (topic, ordered),
    )
    cursor = await conn.execute(
        sql.SQL(
            "SELECT partition, next_offset FROM {} WHERE topic = %s AND partition = ANY(%s)"
            " ORDER BY partition FOR UPDATE"
        ).format(table),
        (topic, ordered),
    )
    return {int(p): int(n) for p, n in await cursor.fetchall()}


async def copy_rows(conn: Connection, schema: str, rows: Iterable[EventRow]) -> None:
    """``COPY`` `rows` into ``event_rows`` (inside the caller's transaction)."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(schema, "event_rows"),
        sql.SQL(", ").join(sql.Identifier(column) for column in COLUMNS),
    )
    async with conn.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            await copy.write_row(row.values())


async def stored_offsets(
    conn: Connection, schema: str, topic: str, partitions: Iterable[int]
) -> dict[int, int]:
    """The stored next offset of each of `partitions` (0 for one never written)."""
    wanted = sorted(partitions)
    cursor = await conn.execute(
        sql.SQL(
            "SELECT partition, next_offset FROM {} WHERE topic = %s AND partition = ANY(%s)"
        ).format(sql.Identifier(schema, "sink_offsets")),
        (topic, wanted),
    )
    found = {int(p): int(n) for p, n in await cursor.fetchall()}
    return {p: found.get(p, 0) for p in wanted}


async def other_topics(conn: Connection, schema: str, topic: str) -> list[str]:
    """The topics other than `topic` whose offsets `schema` holds (one schema, one topic)."""
    cursor = await conn.execute(
        sql.SQL("SELECT DISTINCT topic FROM {} WHERE topic <> %s ORDER BY topic").format(
            sql.Identifier(schema, "sink_offsets")
        ),
        (topic,),
    )
    found = [str(row[0]) for row in await cursor.fetchall()]
    return found
