"""Readers that query a stable schema's views in a loop, recording every failure and what they saw.

Each reader is one autocommit connection (psycopg prepares a statement after its fifth run,
so prepared plans are exercised too) going round: every view alone, two views joined in one
statement, three views in one REPEATABLE READ transaction, the stable record and
``consistent_as_of``. A failure is any exception a query raises.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from streams.sink.database import Connection


@dataclass
class Seen:
    """What the readers did: queries done, failures, targets and positions read."""

    queries: list[float] = field(default_factory=list)
    """When each successful query ended (``time.monotonic``)."""
    failures: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    """The stable record's target, as each reader read it, in its order (all readers)."""
    backwards: list[str] = field(default_factory=list)
    """Each time a reader saw ``consistent_as_of`` of a partition lower than before."""

    def between(self, start: float, end: float) -> int:
        """Queries that ended in [start, end]."""
        return sum(start <= t <= end for t in self.queries)


def _rounds(stable: str, views: Sequence[str]) -> list[list[sql.Composed]]:
    """One round of statements; a list of several is one transaction."""
    alone = [
        [sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(stable, view))] for view in views
    ]
    joined = sql.SQL(
        "SELECT count(*) FROM {} AS s JOIN {} AS e USING (session_key)"
        ' JOIN {} AS l USING ("offset")'
    ).format(
        sql.Identifier(stable, "sessions"),
        sql.Identifier(stable, "events"),
        sql.Identifier(stable, "live_history"),
    )
    several = [
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(stable, view))
        for view in ("state", "summaries", "events")
    ]
    return [*alone, [joined], several]


async def read_loop(
    dsn: str, stable: str, views: Sequence[str], seen: Seen, stop: asyncio.Event
) -> None:
    """Query `stable` until `stop`; everything into `seen`."""
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    target = sql.SQL("SELECT target_schema FROM {}").format(sql.Identifier(stable, "stable_target"))
    offsets = sql.SQL("SELECT partition, next_offset FROM {}").format(
        sql.Identifier(stable, "consistent_as_of")
    )
    highest: dict[int, int] = {}
    try:
        while not stop.is_set():
            for statements in [*_rounds(stable, views), [target], [offsets]]:
                try:
                    rows = await _run(conn, statements)
                except psycopg.Error as exc:
                    seen.failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                seen.queries.append(time.monotonic())
                if statements == [target]:
                    seen.targets.append(str(rows[0][0]))
                elif statements == [offsets]:
                    for partition, next_offset in rows:
                        if next_offset < highest.get(partition, 0):
                            seen.backwards.append(
                                f"{partition}: {highest[partition]} -> {next_offset}"
                            )
                        highest[partition] = max(highest.get(partition, 0), next_offset)
    finally:
        await conn.close()


async def _run(conn: Connection, statements: list[sql.Composed]) -> list[tuple[Any, ...]]:
    if len(statements) == 1:
        cursor = await conn.execute(statements[0])
        return await cursor.fetchall()
    rows: list[tuple[Any, ...]] = []
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        for statement in statements:
            rows += await (await conn.execute(statement)).fetchall()
    return rows
