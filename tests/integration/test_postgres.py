"""A read-model row carries the offset it reflects and only moves forward (style.md, 11)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

pytestmark = pytest.mark.integration

SESSION = "acme/support/u42/s7"

CREATE = """
CREATE TEMPORARY TABLE session_projection (
    session_key text PRIMARY KEY,
    last_offset bigint NOT NULL,
    projection jsonb NOT NULL
)
"""

UPSERT = """
INSERT INTO session_projection (session_key, last_offset, projection)
VALUES (%(session_key)s, %(last_offset)s, %(projection)s)
ON CONFLICT (session_key) DO UPDATE
   SET last_offset = EXCLUDED.last_offset, projection = EXCLUDED.projection
 WHERE session_projection.last_offset < EXCLUDED.last_offset
"""


async def _upsert(conn: psycopg.AsyncConnection[TupleRow], last_offset: int) -> int:
    """Writes the projection as of `last_offset`; returns the rows changed."""
    cursor = await conn.execute(
        UPSERT,
        {
            "session_key": SESSION,
            "last_offset": last_offset,
            "projection": Jsonb({"events": last_offset + 1}),
        },
    )
    return cursor.rowcount


async def _row(conn: psycopg.AsyncConnection[TupleRow]) -> TupleRow | None:
    cursor = await conn.execute(
        "SELECT last_offset, projection FROM session_projection WHERE session_key = %s",
        (SESSION,),
    )
    return await cursor.fetchone()


async def test_an_older_offset_never_overwrites_a_newer_row(postgres_dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await conn.execute(CREATE)

        assert await _upsert(conn, 5) == 1
        assert await _row(conn) == (5, {"events": 6})

        assert await _upsert(conn, 3) == 0  # a late, older write
        assert await _upsert(conn, 5) == 0  # a redelivered one
        assert await _row(conn) == (5, {"events": 6})

        assert await _upsert(conn, 9) == 1
        assert await _row(conn) == (9, {"events": 10})
