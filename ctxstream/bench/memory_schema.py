"""A fresh target schema for the memory benchmark and its tests, made by the migration runner.

:func:`create_memory_schema` runs :func:`streams.sink.migrate.migrate` on a new schema, so
the ``memories`` table is the one ``ctxstream db migrate`` makes; :func:`drop_schema`
removes it afterwards.
"""

from __future__ import annotations

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

from streams.sink.migrate import migrate


async def create_memory_schema(connection: AsyncConnection[TupleRow], schema: str) -> None:
    """Create `schema` with every migration applied (the ``memories`` table included)."""
    await migrate(connection, schema)


async def drop_schema(connection: AsyncConnection[TupleRow], schema: str) -> None:
    """Drop `schema` and everything in it, committed."""
    async with connection.transaction():
        await connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )
