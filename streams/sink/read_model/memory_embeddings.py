"""The sink's embedding pass: memories without an embedding get one, after the batch commits.

Memories are written by the batch without embeddings, so an embeddings endpoint that is
slow or down never holds a batch back and never loses a row. After each committed batch
:class:`EmbeddingPass` embeds up to :data:`PASS_SIZE` memories still without one (oldest
first, ``FOR UPDATE SKIP LOCKED``: two sinks never embed one row twice) and stores their
unit vectors in its own transaction. A failure is one warning line; the pass then waits
(doubling from :data:`FIRST_BACKOFF_S` to :data:`MAX_BACKOFF_S`) and the rows wait with it.
Design: ``ctxstream/memory/README.md``, "Semantic ranking".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

from psycopg import sql

from streams.embeddings.embedder import Embedder, EmbeddingError, unit
from streams.sink.database import Connection

logger = logging.getLogger(__name__)

#: Memories embedded per pass, at most.
PASS_SIZE: Final = 256
FIRST_BACKOFF_S: Final = 1.0
MAX_BACKOFF_S: Final = 60.0


async def embed_pending(
    conn: Connection, schema: str, embedder: Embedder, limit: int = PASS_SIZE
) -> int:
    """Embed up to `limit` memories of `schema` without an embedding; how many were.

    Raises:
        EmbeddingError: The embedder failed (nothing was written).
    """
    async with conn.transaction():
        cursor = await conn.execute(
            sql.SQL(
                "SELECT id, text FROM {} WHERE embedding IS NULL ORDER BY id LIMIT %s"
                " FOR UPDATE SKIP LOCKED"
            ).format(sql.Identifier(schema, "memories")),
            (limit,),
        )
        rows = await cursor.fetchall()
        if not rows:
            return 0
        vectors = await embedder.embed([str(text) for _, text in rows])
        if len(vectors) != len(rows):
            raise EmbeddingError(f"{len(vectors)} vectors for {len(rows)} texts")
        async with conn.cursor() as update:
            await update.executemany(
                sql.SQL("UPDATE {} SET embedding = %s WHERE id = %s").format(
                    sql.Identifier(schema, "memories")
                ),
                [
                    (unit(vector), memory_id)
                    for (memory_id, _), vector in zip(rows, vectors, strict=True)
                ],
            )
    return len(rows)


class EmbeddingPass:
    """:func:`embed_pending` after each batch, backing off while the embedder fails."""

    def __init__(self, embedder: Embedder, *, clock: Callable[[], float] = time.monotonic) -> None:
        """A pass with `embedder`; `clock` (seconds) times the back-off."""
        self._embedder = embedder
        self._clock = clock
        self._backoff_s = 0.0
        self._not_before = 0.0

    async def run(self, conn: Connection, schema: str) -> int:
        """One pass unless backing off; how many memories it embedded (0 after a failure)."""
        if self._clock() < self._not_before:
            return 0
        try:
            embedded = await embed_pending(conn, schema, self._embedder)
        except EmbeddingError as exc:
            self._backoff_s = min(MAX_BACKOFF_S, max(FIRST_BACKOFF_S, 2 * self._backoff_s))
            self._not_before = self._clock() + self._backoff_s
            logger.warning("memory embedding failed, retrying in %.0f s: %s", self._backoff_s, exc)
            return 0
        self._backoff_s = 0.0
        return embedded
