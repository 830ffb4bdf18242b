"""Migration 12 on a schema that holds rows: its tables filled, the view's columns kept.

A schema at version 11 gets the rows a sink wrote for the first half of a generated log (the
log of test_state_tables.py), a stable view reading its ``state`` (as a switch made it), then
migration 12: the view must still be the old one's (state_oracle.py), through the stable view
too, its tables what the sink keeps for the same rows, and the sink must go on from there
over the second half, the view equal to the old one's after every batch. A switch to the
schema then changes no view's columns (no ``--columns-may-change`` needed).
"""

from __future__ import annotations

from collections.abc import Callable

from psycopg import sql

from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.read_model_oracle import fetch
from tests.integration.streams.sink.replay_commands import ctxstream
from tests.integration.streams.sink.sink_load import sink_settings
from tests.integration.streams.sink.state_oracle import old_state, state_view
from tests.integration.streams.sink.test_conditional_rows import load
from tests.integration.streams.sink.test_state_tables import in_log_order, state_log

#: What a batch's transaction writes that the next batches read back.
COPIED = ("event_rows", "sink_offsets", "session_index")
TABLES = ("state_last_writes", "shared_state")


async def copy_rows(conn: Connection, source: str, target: str) -> None:
    for table in COPIED:
        await conn.execute(
            sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
                sql.Identifier(target, table), sql.Identifier(source, table)
            )
        )


async def table_rows(conn: Connection, schema: str, table: str) -> list[tuple[object, ...]]:
    rows = await fetch(conn, schema, f"SELECT * FROM {{}}.{table}")  # noqa: S608 - our names
    return sorted(rows, key=repr)


async def test_migration_12_fills_the_tables_from_the_rows_and_keeps_the_views_columns(
    conn: Connection, make_schema: Callable[[], str], postgres_dsn: str
) -> None:
    records = in_log_order(state_log(seed=46))
    half = len(records) // 2
    kept, older, stable = make_schema(), make_schema(), make_schema()
    await migrate(conn, kept)
    await load(conn, kept, records[:half], 7)
    assert [m.version for m in await migrate(conn, older, up_to=11)][-1] == 11
    await copy_rows(conn, kept, older)
    before = await state_view(conn, older)
    assert before == await old_state(conn, older)  # the oracle is the view as it was
    assert {row[0] for row in before} == {"app", "user", "session"}
    await conn.execute(
        sql.SQL("CREATE SCHEMA {0}; CREATE VIEW {1} AS SELECT * FROM {2}").format(
            sql.Identifier(stable),
            sql.Identifier(stable, "state"),
            sql.Identifier(older, "state"),
        )
    )

    assert [m.version for m in await migrate(conn, older)] == [12]

    assert await state_view(conn, older) == before
    assert await state_view(conn, stable) == before
    for table in TABLES:
        assert await table_rows(conn, older, table) == await table_rows(conn, kept, table)

    async def same_as_the_old_view() -> None:
        assert await state_view(conn, older) == await old_state(conn, older)

    await load(conn, older, records[half:], 5, same_as_the_old_view)
    await load(conn, kept, records[half:], 9)
    for table in TABLES:
        assert await table_rows(conn, older, table) == await table_rows(conn, kept, table)

    settings = sink_settings("127.0.0.1:1", "unused", postgres_dsn, older, partitions=1)
    switched = await ctxstream(settings, "db", "switch", older, "--stable", stable, "--force")
    assert switched.returncode == 0, switched.stderr
    assert await state_view(conn, stable) == await old_state(conn, older)
    assert await table_rows(conn, stable, "shared_state") == await table_rows(
        conn, older, "shared_state"
    )
