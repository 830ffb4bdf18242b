"""A fresh target schema with the ``memories`` table, for the memory benchmark and its tests.

Creates ``pg_trgm`` in ``public`` if missing (as migration 0001 does), the schema, and
applies ``streams/sink/migrations/0002_memory.sql`` in one transaction with
``search_path = <schema>, public``, as the migration runner applies every migration.
The runner (``ctxstream db migrate``) is the product's way; this applies only the
memory migration, for measurements and tests of memory alone.
"""

from __future__ import annotations

from importlib.resources import files

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

MIGRATION = "0002_memory.sql"


async def create_memory_schema(connection: AsyncConnection[TupleRow], schema: str) -> None:
    """Create `schema` with the ``memories`` table of migration 0002, committed."""
    migration = files("streams.sink").joinpath("migrations", MIGRATION).read_text("utf-8")
    async with connection.transaction():
        await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        await connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await connection.execute(
            sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema))
        )
        await connection.execute(sql.SQL(migration))  # a file shipped in the package


async def drop_schema(connection: AsyncConnection[TupleRow], schema: str) -> None:
    """Drop `schema` and everything in it, committed."""
    async with connection.transaction():
        await connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )
