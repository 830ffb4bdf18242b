"""``ctxstream db switch``: a stable schema's views pointed at a target schema, in one transaction.

The switch waits for the target to reach a bar of offsets (the log's end as of the command,
and the schema switched from), then replaces every stable view under a lock budget shorter
than PostgreSQL's ``deadlock_timeout``, so a reader waits for it and never fails; a budget
spent rolls the switch back and it tries again. ``streams/sink/README.md``, "Replay and switch".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import psycopg
from psycopg import sql

from streams.sink.database import Connection
from streams.sink.fence import stored_offsets
from streams.sink.migrate import check_schema
from streams.sink.replay.errors import SwitchError
from streams.sink.replay.plan import (
    RECORD_TABLE,
    Relation,
    SwitchPlan,
    plan_switch,
    switch_steps,
)
from streams.sink.replay.positions import lagging, said_lag
from streams.sink.target_schema import target_schema

logger = logging.getLogger(__name__)

#: How long a switch may hold the views it has locked while it waits for the others.
DEFAULT_LOCK_BUDGET_S: Final = 0.2
_RETRY_S: Final = 0.1
_LOCK_PREFIX: Final = "ctxstream.switch:"


@dataclass(frozen=True, slots=True)
class CatchUp:
    """The bar a switch waits for: each partition of `topic` at least at `ends`."""

    topic: str
    ends: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class Switched:
    """A switch done: the stable views read `target` (at migration `version`) now."""

    stable: str
    target: str
    previous: str | None
    version: int
    plan: SwitchPlan


@dataclass(frozen=True, slots=True)
class StableTarget:
    """What a stable schema's record says: the target its views read, since when."""

    target: str
    version: int
    switched_at: datetime


class _NotYet(Exception):
    """The switch cannot happen now; it may later (a target behind, views locked)."""

    def __init__(self, message: str, contended: str | None = None) -> None:
        super().__init__(message)
        self.contended = contended
        """The view whose lock the switch waited for in vain, if that was why."""


async def switch_stable(
    conn: Connection,
    target: str,
    *,
    stable: str,
    catch_up: CatchUp | None,
    wait_s: float = 0.0,
    columns_may_change: bool = False,
    lock_budget_s: float = DEFAULT_LOCK_BUDGET_S,
) -> Switched:
    """Point `stable`'s views at `target` once it has caught up; `catch_up` None skips that.

    Tried again every 0.1 s for `wait_s` seconds while the target is behind or readers
    hold the views longer than the lock budget. A switch that changes the columns of an
    existing view is refused unless `columns_may_change` (a prepared ``SELECT *`` of it
    would fail).

    Raises:
        SchemaVersionError: `target` is missing or not at the code's migration version.
        SwitchError: `stable` is `target` or holds tables; columns would change; still
            behind, or still locked, after `wait_s`; the message says which, and what to do.
    """
    target_schema(target)
    target_schema(stable)
    if target == stable:
        raise SwitchError(f"the stable schema {stable!r} cannot be its own target")
    version = await check_schema(conn, target)
    deadline = time.monotonic() + wait_s
    contended: list[str] = []  # most recent first: the next attempt takes them first
    while True:
        try:
            if catch_up is not None:
                await _check_not_behind(conn, target, catch_up, catch_up.ends, "the log's end")
            return await _switch_once(
                conn,
                target,
                stable,
                catch_up,
                (version, columns_may_change),
                (contended, lock_budget_s),
            )
        except _NotYet as exc:
            if time.monotonic() >= deadline:
                raise SwitchError(str(exc)) from None
            if exc.contended is not None:
                contended[:] = [exc.contended, *(n for n in contended if n != exc.contended)]
            await asyncio.sleep(_RETRY_S)


async def stable_target(conn: Connection, stable: str) -> StableTarget | None:
    """What `stable`'s record says, or None when it has none (never switched)."""
    if not await has_relation(conn, stable, RECORD_TABLE):
        return None
    cursor = await conn.execute(
        sql.SQL("SELECT target_schema, version, switched_at FROM {}").format(
            sql.Identifier(stable, RECORD_TABLE)
        )
    )
    row = await cursor.fetchone()
    return None if row is None else StableTarget(str(row[0]), int(row[1]), row[2])


async def _switch_once(
    conn: Connection,
    target: str,
    stable: str,
    catch_up: CatchUp | None,
    checked: tuple[int, bool],
    locking: tuple[list[str], float],
) -> Switched:
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_LOCK_PREFIX + stable,)
        )
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(stable)))
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (target_schema text NOT NULL,"
                " version integer NOT NULL, switched_at timestamptz NOT NULL,"
                " one boolean PRIMARY KEY DEFAULT true CHECK (one))"
            ).format(sql.Identifier(stable, RECORD_TABLE))
        )
        plan = plan_switch(stable, await _relations(conn, stable), await _relations(conn, target))
        version, columns_may_change = checked
        if plan.changed and not columns_may_change:
            raise SwitchError(
                f"the columns of {', '.join(plan.changed)} in {stable!r} would change (schema "
                f"{target!r} is at another migration than they were made for): a reader's "
                "prepared SELECT * of them fails until prepared again; switch when readers can "
                "take that, with --columns-may-change"
            )
        previous = await stable_target(conn, stable)
        contended, budget_s = locking
        steps = switch_steps(plan, stable, target, contended)
        await _replace_views(conn, steps, budget_s, stable)
        if (
            catch_up is not None
            and previous is not None
            and previous.target != target
            and await has_relation(conn, previous.target, "sink_offsets")
        ):
            ends = await stored_offsets(conn, previous.target, catch_up.topic, catch_up.ends)
            await _check_not_behind(conn, target, catch_up, ends, f"{previous.target!r}")
        await conn.execute(
            sql.SQL(
                "INSERT INTO {} (target_schema, version, switched_at) VALUES (%s, %s, now())"
                " ON CONFLICT (one) DO UPDATE SET target_schema = excluded.target_schema,"
                " version = excluded.version, switched_at = excluded.switched_at"
            ).format(sql.Identifier(stable, RECORD_TABLE)),
            (target, version),
        )
    logger.info("stable schema %s reads %s now (was %s)", stable, target, previous)
    return Switched(stable, target, None if previous is None else previous.target, version, plan)


async def _replace_views(
    conn: Connection, steps: list[tuple[str, list[sql.Composed]]], budget_s: float, stable: str
) -> None:
    """Run `steps`, all their lock waits together within the budget (else `_NotYet`).

    A reader waits for a view this transaction holds; should it hold another the switch
    waits for, PostgreSQL would end one of the two after ``deadlock_timeout``: the budget,
    at most half of it, makes the switch give up first.
    """
    cursor = await conn.execute(
        "SELECT setting::bigint FROM pg_settings WHERE name = 'deadlock_timeout'"
    )
    row = await cursor.fetchone()
    budget_ms = min(budget_s * 1000, (int(row[0]) if row else 1000) / 2)
    started = time.monotonic()
    for view, statements in steps:
        for statement in statements:
            left = max(1, int(budget_ms - (time.monotonic() - started) * 1000))
            await conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{left}ms",))
            try:
                await conn.execute(statement)
            except psycopg.errors.LockNotAvailable:
                raise _NotYet(
                    f"readers held the views of {stable!r} longer than the switch may wait "
                    f"({budget_ms:.0f} ms at a time); try again, or give --wait more seconds",
                    view,
                ) from None
    await conn.execute("SELECT set_config('lock_timeout', '0', true)")


async def _check_not_behind(
    conn: Connection, target: str, catch_up: CatchUp, bar: Mapping[int, int], what: str
) -> None:
    stored = await stored_offsets(conn, target, catch_up.topic, bar)
    if lag := lagging(stored, bar):
        raise _NotYet(f"schema {target!r} is behind {what} on {catch_up.topic}: {said_lag(lag)}")


async def has_relation(conn: Connection, schema: str, name: str) -> bool:
    """Whether `schema` has a table or view `name` (False too when `schema` is missing)."""
    qualified = sql.Identifier(schema, name).as_string(conn)
    cursor = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,))
    row = await cursor.fetchone()
    return bool(row and row[0])


async def _relations(conn: Connection, schema: str) -> dict[str, Relation]:
    """Every table and view of `schema` with its columns in order (none: an empty dict)."""
    cursor = await conn.execute(
        "SELECT c.relname, c.relkind = 'v', a.attname, format_type(a.atttypid, a.atttypmod),"
        " a.attcollation"
        " FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attribute AS a"
        "   ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        " ORDER BY c.relname, a.attnum",
        (schema,),
    )
    found: dict[str, tuple[bool, list[tuple[str, str, int]]]] = {}
    for name, is_view, column, type_name, collation in await cursor.fetchall():
        entry = found.setdefault(str(name), (bool(is_view), []))
        if column is not None:
            entry[1].append((str(column), str(type_name), int(collation)))
    return {name: Relation(is_view, tuple(columns)) for name, (is_view, columns) in found.items()}


async def adopt_stable(
    conn: Connection, target: str, *, stable: str, wait_s: float = 10.0
) -> Switched | None:
    """Point `stable` at `target` unless it reads another target that still exists.

    What ``ctxstream up`` does after migrating its target: on a fresh install the stable
    names appear at once; on a restart they are refreshed (a migration may have added a
    view or columns: ``up`` deploys code, so columns may change); after a ``db switch`` to
    another schema they are left alone (None).
    """
    current = await stable_target(conn, stable)
    if (
        current is not None
        and current.target != target
        and await has_relation(conn, current.target, "sink_offsets")
    ):
        return None
    return await switch_stable(
        conn, target, stable=stable, catch_up=None, wait_s=wait_s, columns_may_change=True
    )
