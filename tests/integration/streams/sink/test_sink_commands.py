"""``ctxstream db migrate`` and ``ctxstream sink`` refusals: one line, the password masked."""

from __future__ import annotations

import os
import subprocess
import sys

from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.migration_files import latest_version, load_migrations, migration_of
from tests.conftest import free_ports
from tests.integration.streams.sink.sink_load import REPO

SHIPPED = latest_version(load_migrations())


def ctxstream(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "CTXSTREAM_POSTGRES_DSN"}
    return subprocess.run(
        [sys.executable, "-m", "ctxstream", *args],
        cwd=REPO,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_migrate_without_a_dsn_says_how_to_give_one() -> None:
    done = ctxstream("db", "migrate", "--schema", "never_made")

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "ctxstream db migrate: no PostgreSQL DSN: set CTXSTREAM_POSTGRES_DSN or pass --dsn "
        "(postgresql://user:password@host:port/database)"
    ]


def test_an_unreachable_server_is_one_line_with_the_password_masked() -> None:
    (port,) = free_ports(1)
    done = ctxstream(
        "db", "migrate", "--schema", "never_made",
        CTXSTREAM_POSTGRES_DSN=f"postgresql://someone:topsecret@127.0.0.1:{port}/db",
    )  # fmt: skip

    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"ctxstream db migrate: cannot connect to postgresql://someone:***@127.0.0.1:{port}/db: "
    )
    assert "topsecret" not in done.stderr


async def test_the_sink_refuses_a_schema_unmigrated_or_newer_naming_the_versions(
    conn: Connection, schema: str, postgres_dsn: str
) -> None:
    unmigrated = ctxstream("sink", "--dsn", postgres_dsn, "--schema", schema)
    await migrate(
        conn,
        schema,
        migrations=[*load_migrations(), migration_of(f"{SHIPPED + 1:04d}_later.sql", b"")],
    )
    newer = ctxstream("sink", "--schema", schema, CTXSTREAM_POSTGRES_DSN=postgres_dsn)

    assert (unmigrated.returncode, newer.returncode) == (1, 1)
    assert unmigrated.stderr.splitlines() == [
        f"ctxstream sink: schema '{schema}' has no migrations; "
        f"this code expects version {SHIPPED}: "
        f"run `ctxstream db migrate --schema {schema}`"
    ]
    assert newer.stderr.splitlines() == [
        f"ctxstream sink: schema '{schema}' is at version {SHIPPED + 1}, newer than the "
        f"{SHIPPED} this code "
        "expects: run the ctxstream that migrated it"
    ]
