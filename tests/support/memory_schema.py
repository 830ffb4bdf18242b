"""A fresh schema with every migration applied, on a connection of its own, for memory tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from ctxstream.bench.memory_schema import create_memory_schema, drop_schema


@asynccontextmanager
async def fresh_memory_schema(
    dsn: str, prefix: str
) -> AsyncIterator[tuple[AsyncConnection[TupleRow], str]]:
    """An autocommit connection to `dsn` and a new schema named `prefix_<hex>`, dropped after."""
    async with await AsyncConnection.connect(dsn, autocommit=True) as connection:
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        await create_memory_schema(connection, name)
        try:
            yield connection, name
        finally:
            await drop_schema(connection, name)
