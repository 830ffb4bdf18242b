"""Fixtures of the sink's tests: a fresh target schema per test on the real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import psycopg
import pytest
from psycopg import sql

from streams.sink.database import Connection, connect


def fresh_schema_name() -> str:
    """A schema name no other test uses."""
    return f"test_sink_{uuid.uuid4().hex[:16]}"


def drop_schema(dsn: str, schema: str) -> None:
    """Drop `schema` and everything in it (a test's own schema only)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def make_schema(postgres_dsn: str) -> Iterator[Callable[[], str]]:
    """Makes fresh schema names; every one is dropped when the test ends."""
    made: list[str] = []

    def make() -> str:
        made.append(fresh_schema_name())
        return made[-1]

    yield make
    for schema in made:
        drop_schema(postgres_dsn, schema)


@pytest.fixture
def schema(make_schema: Callable[[], str]) -> str:
    """One fresh schema name for the test."""
    return make_schema()


@pytest.fixture
async def conn(postgres_dsn: str) -> AsyncIterator[Connection]:
    """An autocommit connection to the test database."""
    connection = await connect(postgres_dsn)
    try:
        yield connection
    finally:
        await connection.close()
