"""The migration runner and the version check the sink makes at start (psycopg, async).

:func:`migrate` applies each missing migration in a transaction of its own, under advisory
locks, with ``search_path`` = ``<target>, public``; :func:`check_schema` refuses a schema
older or newer than the code. The rules: ``streams/sink/README.md``, "Migrations".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Final

import psycopg
from psycopg import sql

from streams.sink.database import Connection
from streams.sink.errors import MigrationError, SchemaVersionError
from streams.sink.migration_files import Migration, latest_version, load_migrations

logger = logging.getLogger(__name__)

#: Extensions a migration creates, and which package ships each.
EXTENSION_PACKAGES: Final = {
    "pg_trgm": "Debian's postgresql-15 package ships it (postgresql-contrib on other systems)",
}
_LOCK_PREFIX: Final = "ctxstream.migrate:"
#: Extensions are objects of the whole database: every target schema's runs queue on this key.
_DATABASE_LOCK: Final = "ctxstream.migrate.extensions"
_MISSING_EXTENSION: Final = re.compile(r'extension "([^"]+)" is not available')


async def migrate(
    conn: Connection,
    schema: str,
    *,
    migrations: Sequence[Migration] | None = None,
    up_to: int | None = None,
) -> list[Migration]:
    """Apply the migrations `schema` lacks, up to version `up_to` (default: all); those applied.

    Each one runs in its own transaction, under ``pg_advisory_xact_lock`` of a key derived
    from `schema` (and one database-wide key), so concurrent runs apply each once.

    Raises:
        MigrationError: a recorded checksum differs from its file, the schema is newer than
            `migrations`, an extension is missing, or a migration's SQL fails.
    """
    wanted = tuple(migrations if migrations is not None else load_migrations())
    if up_to is not None:
        wanted = tuple(m for m in wanted if m.version <= up_to)
    known = latest_version(wanted)
    applied = [m for m in wanted if await _apply(conn, schema, m, known=known)]
    if not wanted:  # nothing to apply: still check what the schema holds
        await _apply(conn, schema, None, known=0)
    return applied


async def _apply(conn: Connection, schema: str, migration: Migration | None, *, known: int) -> bool:
    async with conn.transaction():
        await _lock_and_prepare(conn, schema)
        recorded = await _recorded(conn)
        newest = max(recorded, default=0)
        if newest > known:
            raise MigrationError(
                f"schema {schema!r} is at version {newest}, newer than this code's {known}: "
                "run a newer ctxstream"
            )
        if migration is None:
            return False
        if migration.version in recorded:
            _check_checksum(schema, migration, recorded[migration.version])
            return False
        try:
            await conn.execute(migration.sql.encode())
        except psycopg.errors.FeatureNotSupported as exc:
            raise _missing_extension(migration, exc) from None
        except psycopg.Error as exc:
            raise MigrationError(f"migration {migration.label} failed: {exc}") from None
        await conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
            (migration.version, migration.name, migration.checksum),
        )
    logger.info("schema %s: applied migration %s", schema, migration.label)
    return True


async def _lock_and_prepare(conn: Connection, schema: str) -> None:
    for key in (_LOCK_PREFIX + schema, _DATABASE_LOCK):
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
    await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    await _use_schema(conn, schema)
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY CHECK (version > 0),"
        " name text NOT NULL,"
        " checksum text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )


async def _use_schema(conn: Connection, schema: str) -> None:
    """``search_path`` = ``<schema>, public`` until the transaction ends."""
    path = sql.SQL("{}, public").format(sql.Identifier(schema)).as_string(conn)
    await conn.execute("SELECT set_config('search_path', %s, true)", (path,))


async def _recorded(conn: Connection) -> dict[int, str]:
    cursor = await conn.execute("SELECT version, checksum FROM schema_migrations")
    return {int(version): str(checksum) for version, checksum in await cursor.fetchall()}


def _check_checksum(schema: str, migration: Migration, recorded: str) -> None:
    if recorded != migration.checksum:
        raise MigrationError(
            f"schema {schema!r}: migration {migration.label} was applied with checksum "
            f"{recorded}, but its file now has {migration.checksum}; migrations are "
            "forward-only: undo the edit and add a new migration instead"
        )


def _missing_extension(migration: Migration, exc: psycopg.Error) -> MigrationError:
    message = str(exc).splitlines()[0]
    if (match := _MISSING_EXTENSION.search(message)) is None:
        return MigrationError(f"migration {migration.label} failed: {message}")
    name = match[1]
    ships = EXTENSION_PACKAGES.get(name, "install it on the database server")
    return MigrationError(
        f"migration {migration.label} needs the PostgreSQL extension {name}, which the "
        f"server does not have: {ships}"
    )


async def check_schema(
    conn: Connection, schema: str, *, migrations: Sequence[Migration] | None = None
) -> int:
    """The schema's version, once it is exactly the one `migrations` (default: shipped) reach.

    Raises:
        SchemaVersionError: the schema has no migrations, is older or newer than the code,
            or a recorded checksum differs from its file; the message names the versions.
    """
    known = tuple(migrations if migrations is not None else load_migrations())
    expected = latest_version(known)
    async with conn.transaction():
        cursor = await conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL",
            (sql.SQL("{}.schema_migrations").format(sql.Identifier(schema)).as_string(conn),),
        )
        row = await cursor.fetchone()
        if row is None or not row[0]:
            raise SchemaVersionError(
                f"schema {schema!r} has no migrations; this code expects version {expected}: "
                f"run `ctxstream db migrate --schema {schema}`"
            )
        await _use_schema(conn, schema)
        recorded = await _recorded(conn)
    version = max(recorded, default=0)
    if version < expected:
        raise SchemaVersionError(
            f"schema {schema!r} is at version {version}, older than the {expected} this code "
            f"expects: run `ctxstream db migrate --schema {schema}`"
        )
    if version > expected:
        raise SchemaVersionError(
            f"schema {schema!r} is at version {version}, newer than the {expected} this code "
            "expects: run the ctxstream that migrated it"
        )
    for migration in known:
        if recorded.get(migration.version) != migration.checksum:
            raise SchemaVersionError(
                f"schema {schema!r}: migration {migration.label} was applied with another "
                "checksum than its file has"
            )
    return version
