"""Memories written to a target schema's ``memories`` table in bulk, each at most once.

``COPY`` fills a per-connection staging table, and one statement moves its rows into
``<schema>.memories`` (migration ``0002_memory.sql``) with ``ON CONFLICT DO NOTHING``
(``COPY`` alone cannot skip a row already there; the unique ``(session_key,
memory_id)`` makes a redelivered or replayed event a no-op) and adds the new rows'
lexemes to ``memory_lexemes``, the vocabulary the search matches typos against, in
lexeme order, so two writers lock shared lexemes in the same order.
The caller owns the transaction (the sink's batch transaction; a test's or the
benchmark's own), so the memories commit with whatever else it writes.

Example: ``await add_memories(connection, "ctxstream", [memory])`` -> ``1``; the same
call again -> ``0``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow

from projections.memory.memory_record import Memory

#: The columns written, in the order COPY sends them.
COLUMNS: Final = (
    "tenant",
    "app",
    "user_id",
    "session_key",
    "memory_id",
    "partition",
    "offset",
    "author",
    "role",
    "event_timestamp",
    "kind",
    "covered_start",
    "covered_end",
    "text",
    "language",
)
#: Session-local (pg_temp), emptied at every commit, so it never outlives a batch's
#: transaction; created once per connection.
_STAGING: Final = sql.SQL(
    "CREATE TEMP TABLE IF NOT EXISTS memory_staging ("
    " tenant text, app text, user_id text, session_key text, memory_id text,"
    ' partition integer, "offset" bigint, author text, role text,'
    " event_timestamp double precision, kind text, covered_start double precision,"
    " covered_end double precision, text text, language regconfig"
    ") ON COMMIT DELETE ROWS"
)

_MOVE: Final = sql.SQL(
    "WITH inserted AS ("
    " INSERT INTO {memories} ({columns}) SELECT {columns} FROM pg_temp.memory_staging"
    " ON CONFLICT (session_key, memory_id) DO NOTHING RETURNING text_vector"
    "), vocabulary AS ("
    " INSERT INTO {lexemes} (lexeme)"
    " SELECT DISTINCT lexeme FROM inserted, unnest(tsvector_to_array(inserted.text_vector))"
    " AS lexeme ORDER BY 1 ON CONFLICT DO NOTHING"
    ") SELECT count(*) FROM inserted"
)


def _row(memory: Memory, language: str) -> tuple[object, ...]:
    start, end = memory.covered if memory.covered is not None else (None, None)
    return (
        memory.tenant,
        memory.app,
        memory.user_id,
        memory.session_key,
        memory.memory_id,
        memory.partition,
        memory.offset,
        memory.author,
        memory.role,
        memory.timestamp,
        memory.kind,
        start,
        end,
        memory.text,
        language,
    )


async def add_memories(
    connection: AsyncConnection[TupleRow],
    schema: str,
    memories: Iterable[Memory],
    *,
    language: str = "english",
) -> int:
    """Write `memories` into `schema`'s ``memories`` table; the number of rows new there.

    Args:
        connection: An open connection; the rows commit with its transaction.
        schema: The target schema (``0002_memory.sql`` applied there).
        memories: What to write; one already stored (same session and id) is skipped.
        language: The text-search configuration (``regconfig``) of the texts.
    """
    columns = sql.SQL(", ").join(sql.Identifier(name) for name in COLUMNS)
    async with connection.cursor() as cursor:
        await cursor.execute(_STAGING)
        async with cursor.copy(
            sql.SQL("COPY pg_temp.memory_staging ({}) FROM STDIN").format(columns)
        ) as copy:
            for memory in memories:
                await copy.write_row(_row(memory, language))
        await cursor.execute(
            _MOVE.format(
                memories=sql.Identifier(schema, "memories"),
                lexemes=sql.Identifier(schema, "memory_lexemes"),
                columns=columns,
            )
        )
        row = await cursor.fetchone()
        inserted = int(row[0]) if row is not None else 0
        # Emptied now too, not only at commit: a second call in the same transaction.
        await cursor.execute("DELETE FROM pg_temp.memory_staging")
    return inserted
