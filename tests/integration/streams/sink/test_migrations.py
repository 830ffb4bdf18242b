"""The migration runner and the version check against the real PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from psycopg import sql

from streams.sink.database import Connection
from streams.sink.errors import MigrationError, SchemaVersionError
from streams.sink.migrate import check_schema, migrate
from streams.sink.migration_files import Migration, latest_version, load_migrations, migration_of

REPO = Path(__file__).resolve().parents[4]
BASE_FILE = REPO / "streams" / "sink" / "migrations" / "0001_base.sql"
PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump"
#: The version the shipped migrations reach.
SHIPPED = latest_version(load_migrations())
#: One more migration, for the tests only: a table, an index on the base's table and a view.
LATER = migration_of(
    f"{SHIPPED + 1:04d}_later.sql",
    b"CREATE TABLE notes (id bigint PRIMARY KEY, body text NOT NULL);\n"
    b"CREATE INDEX event_rows_author ON event_rows (author);\n"
    b"CREATE VIEW note_count AS SELECT count(*) AS n FROM notes;\n",
)


def two_versions() -> tuple[Migration, ...]:
    return (*load_migrations(), LATER)


async def recorded(conn: Connection, schema: str) -> list[tuple[int, str, str]]:
    cursor = await conn.execute(
        sql.SQL("SELECT version, name, checksum FROM {} ORDER BY version").format(
            sql.Identifier(schema, "schema_migrations")
        )
    )
    return [(int(v), str(n), str(c)) for v, n, c in await cursor.fetchall()]


async def tables(conn: Connection, schema: str) -> set[str]:
    cursor = await conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    )
    return {str(row[0]) for row in await cursor.fetchall()}


async def test_migrate_from_empty_then_again_is_a_no_op(conn: Connection, schema: str) -> None:
    first = await migrate(conn, schema)
    again = await migrate(conn, schema)

    assert [m.label for m in first][:1] == ["0001_base"]
    assert [m.version for m in first] == list(range(1, SHIPPED + 1))
    assert again == []
    checksum = hashlib.sha256(BASE_FILE.read_bytes()).hexdigest()
    assert (await recorded(conn, schema))[0] == (1, "base", checksum)
    assert len(await recorded(conn, schema)) == SHIPPED
    assert {"schema_migrations", "sink_offsets", "event_rows"} <= await tables(conn, schema)
    cursor = await conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'pg_trgm'"
    )
    assert await cursor.fetchall() == [("public",)]
    assert await check_schema(conn, schema) == SHIPPED


def run_migrate(dsn: str, schema: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ctxstream", "db", "migrate", "--dsn", dsn, "--schema", schema],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_concurrent_migrate_commands_apply_each_version_once(
    conn: Connection, schema: str, postgres_dsn: str
) -> None:
    runs = [run_migrate(postgres_dsn, schema) for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]

    assert [run.returncode for run in runs] == [0, 0], outputs
    said = sorted(out.strip() for out, _ in outputs)
    applied = "\n".join(f"schema {schema}: applied {m.label}" for m in load_migrations())
    assert said == [applied, f"schema {schema}: up to date"]
    assert [version for version, _, _ in await recorded(conn, schema)] == list(
        range(1, SHIPPED + 1)
    )


async def test_a_changed_checksum_is_refused_naming_the_version(
    conn: Connection, schema: str
) -> None:
    await migrate(conn, schema)
    edited = migration_of("0001_base.sql", BASE_FILE.read_bytes() + b"\n-- edited\n")
    shipped = [edited, *load_migrations()[1:]]

    with pytest.raises(MigrationError, match=r"migration 0001_base was applied with checksum"):
        await migrate(conn, schema, migrations=shipped)
    with pytest.raises(SchemaVersionError, match=r"0001_base was applied with another checksum"):
        await check_schema(conn, schema, migrations=shipped)


async def test_check_schema_refuses_older_and_newer_naming_the_versions(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    older, newer, empty = make_schema(), make_schema(), make_schema()
    later = SHIPPED + 1
    await migrate(conn, older, migrations=two_versions(), up_to=SHIPPED)
    await migrate(conn, newer, migrations=two_versions())

    with pytest.raises(
        SchemaVersionError, match=rf"at version {SHIPPED}, older than the {later} this code"
    ):
        await check_schema(conn, older, migrations=two_versions())
    with pytest.raises(
        SchemaVersionError, match=rf"at version {later}, newer than the {SHIPPED} this code"
    ):
        await check_schema(conn, newer)
    with pytest.raises(
        SchemaVersionError, match=rf"has no migrations; this code expects version {SHIPPED}"
    ):
        await check_schema(conn, empty)
    with pytest.raises(
        MigrationError, match=rf"at version {later}, newer than this code's {SHIPPED}"
    ):
        await migrate(conn, newer)
    assert await check_schema(conn, newer, migrations=two_versions()) == later


async def test_a_missing_extension_is_a_clear_error_and_nothing_is_recorded(
    conn: Connection, schema: str
) -> None:
    needs = migration_of("0001_base.sql", b"CREATE EXTENSION IF NOT EXISTS no_such_ext_for_test;")

    with pytest.raises(
        MigrationError, match=r"needs the PostgreSQL extension no_such_ext_for_test"
    ):
        await migrate(conn, schema, migrations=[needs])
    assert await tables(conn, schema) == set()  # the migration's transaction rolled back whole


def schema_dump(dsn: str, schema: str) -> str:
    dumped = subprocess.run(
        [PG_DUMP, "--schema-only", "--no-owner", "--schema", schema, "--dbname", dsn],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Leave out the version banner and the random key of pg_dump's \restrict lines.
    lines = [
        line
        for line in dumped.splitlines()
        if not line.startswith(("-- Dumped ", "\\restrict", "\\unrestrict"))
    ]
    return "\n".join(lines).replace(schema, "<schema>")


async def test_one_go_and_one_version_at_a_time_dump_the_same_schema(
    conn: Connection, make_schema: Callable[[], str], postgres_dsn: str
) -> None:
    at_once, stepwise = make_schema(), make_schema()
    await migrate(conn, at_once, migrations=two_versions())
    for version in range(1, SHIPPED + 2):  # one version at a time
        await migrate(conn, stepwise, migrations=two_versions(), up_to=version)

    dumps = await asyncio.gather(
        asyncio.to_thread(schema_dump, postgres_dsn, at_once),
        asyncio.to_thread(schema_dump, postgres_dsn, stepwise),
    )

    assert "CREATE TABLE <schema>.event_rows" in dumps[0]
    assert "CREATE VIEW <schema>.note_count" in dumps[0]
    assert dumps[0] == dumps[1]


async def test_statuses_are_refused_on_a_schema_holding_rows_without_them(
    conn: Connection, schema: str
) -> None:
    await migrate(conn, schema, up_to=2)
    await conn.execute(
        sql.SQL(
            'INSERT INTO {} (partition, "offset", session_key, tenant, app, user_id, session_id,'
            " event_id, invocation_id, author, event_timestamp, producer_id, idempotency_key,"
            " event, lossy) VALUES (0, 0, 'a/b/c/d', 'a', 'b', 'c', 'd', 'e', 'i', 'user', 1.0,"
            " 'p', 'k', '{{}}', false)"
        ).format(sql.Identifier(schema, "event_rows"))
    )

    with pytest.raises(MigrationError, match="without statuses"):
        await migrate(conn, schema)

    await conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, "event_rows")))
    await migrate(conn, schema)  # an empty table takes the column
    await check_schema(conn, schema)
