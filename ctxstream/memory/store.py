"""Long-term memory search over a target schema's ``memories`` table (psycopg 3, async).

:meth:`MemoryStore.search` answers the whole sentences ADK's ``preload_memory`` sends:
the OR of the query's lexemes and of the vocabulary lexemes near them (``pg_trgm``, for
names and typos), ranked by ``ts_rank_cd`` plus each query word's ``word_similarity`` to
what a memory holds, scoped in SQL to one tenant, app and user, summaries standing in
for the raw events they cover
(:mod:`ctxstream.memory.search_sql`; the formula and the measurements:
``ctxstream/memory/README.md``). The store holds one connection; open one per task
that searches concurrently.

Example::

    async with MemoryStore.connect(dsn, schema="ctxstream") as memory:
        entries = await memory.search("acme", "support", "u42", "Where did I park my car?")
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow, class_row

from ctxstream.errors import InvalidArgumentError
from ctxstream.memory.entry import MemoryEntry
from ctxstream.memory.search_sql import (
    MAX_FUZZY_WORDS,
    QUERY_LEXEMES,
    search_statement,
    word_parameter,
)
from projections.memory.memory_record import MemoryKind, memory_timestamp
from schemas.event import Content, Part
from streams.embeddings.embedder import Embedder, unit

#: ADK's InMemoryMemoryService returns at most 10 (its SQLite service 50).
DEFAULT_LIMIT: Final = 10
#: The most memories one search may return.
MAX_LIMIT: Final = 1000
DEFAULT_LANGUAGE: Final = "english"
#: With an embedder: the weight of cosine similarity against the normalized lexical score.
DEFAULT_SEMANTIC_WEIGHT: Final = 0.5
#: With an embedder: how many of the best lexical candidates are re-ranked.
RERANK_DEPTH: Final = 50


class MemoryStore:
    """The memories of one target schema, searched over one open connection."""

    def __init__(
        self,
        connection: AsyncConnection[TupleRow],
        *,
        schema: str = "ctxstream",
        language: str = DEFAULT_LANGUAGE,
        embedder: Embedder | None = None,
        semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    ) -> None:
        """Search `schema` over `connection` in text-search configuration `language`.

        `language` (a ``regconfig``, e.g. ``english``, ``simple``, ``german``) is used for
        the query and selects the memories stored in it, so both sides are parsed alike.
        With `embedder` (the one the sink embeds with), the lexical candidates are re-ranked
        by cosine similarity at `semantic_weight` (0 to 1; README, "Semantic ranking").

        Raises:
            InvalidArgumentError: `semantic_weight` is not in 0..1.
        """
        if not 0 <= semantic_weight <= 1:
            raise InvalidArgumentError(f"semantic_weight: {semantic_weight!r}, expected 0 to 1")
        self._connection = connection
        self._schema = schema
        self._language = language
        self._embedder = embedder
        self._semantic_weight = semantic_weight

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        dsn: str,
        *,
        schema: str = "ctxstream",
        language: str = DEFAULT_LANGUAGE,
        embedder: Embedder | None = None,
        semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    ) -> AsyncIterator[MemoryStore]:
        """A store on a connection of its own to `dsn`, closed on exit (arguments: ``__init__``).

        Raises:
            InvalidArgumentError: `language` is no text-search configuration there.
        """
        async with await AsyncConnection.connect(dsn, autocommit=True) as connection:
            try:
                await connection.execute("SELECT %s::regconfig", (language,))
            except psycopg.errors.UndefinedObject:
                raise InvalidArgumentError(
                    f"language: {language!r} is no text-search configuration of the database"
                ) from None
            yield cls(
                connection,
                schema=schema,
                language=language,
                embedder=embedder,
                semantic_weight=semantic_weight,
            )

    async def search(
        self, tenant: str, app: str, user: str, query: str, limit: int = DEFAULT_LIMIT
    ) -> list[MemoryEntry]:
        """The memories of (`tenant`, `app`, `user`) that best answer `query`, best first.

        Ranking: each query lexeme ``w`` stands for itself and the vocabulary lexemes
        ``v`` with ``w <% v`` (pg_trgm's ``word_similarity`` at least its threshold, 0.6);
        ``score = ts_rank_cd(text_vector, OR of all of them) + the sum over w of the best
        word_similarity(w, v) among the v the memory holds`` (1 for w itself); ties go
        to the newer memory. A raw event covered by a summary that is also a hit is
        dropped, and so is a summary inside another hit summary's range: the summary
        stands in for them with the best of its own score and theirs. A query with
        no lexemes (stop words, punctuation, empty) finds nothing. With an embedder, the
        :data:`RERANK_DEPTH` best (at least `limit`) are re-ranked by
        ``(1 - w) * score / max score + w * max(0, cosine(memory, query))``.

        Raises:
            InvalidArgumentError: `limit` is not in 1..:data:`MAX_LIMIT`.
            EmbeddingError: The embedder could not embed the query.
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit: {limit!r}, expected 1 to {MAX_LIMIT}")
        # PostgreSQL's text refuses NUL; a NUL only separates words here.
        text = query.replace("\x00", " ")
        async with self._connection.cursor() as cursor:
            await cursor.execute(QUERY_LEXEMES, {"language": self._language, "query": text})
            row = await cursor.fetchone()
        lexemes: list[str] = row[0] if row is not None else []
        if not lexemes:
            return []
        fuzzy = lexemes[:MAX_FUZZY_WORDS]
        parameters: dict[str, object] = {
            "tenant": tenant,
            "app": app,
            "user_id": user,
            "language": self._language,
            "lexemes": lexemes,
            "limit": limit,
        }
        parameters.update({word_parameter(n): word for n, word in enumerate(fuzzy)})
        if self._embedder is not None:
            (vector,) = await self._embedder.embed([text])
            parameters.update(
                vector=unit(vector),
                weight=self._semantic_weight,
                depth=max(limit, RERANK_DEPTH),
            )
        semantic = self._embedder is not None
        statement = search_statement(self._schema, len(fuzzy), semantic=semantic)
        async with self._connection.cursor(row_factory=class_row(_Row)) as cursor:
            await cursor.execute(statement, parameters)
            rows = await cursor.fetchall()
        return [row.entry() for row in rows]


@dataclass(frozen=True, slots=True)
class _Row:
    """One row of the search statement, by column name."""

    memory_id: str
    author: str
    role: str | None
    event_timestamp: float
    text: str
    kind: MemoryKind
    session_key: str
    score: float

    def entry(self) -> MemoryEntry:
        return MemoryEntry(
            id=self.memory_id,
            author=self.author,
            timestamp=memory_timestamp(self.event_timestamp),
            content=Content(role=self.role, parts=[Part(text=self.text)]),
            kind=self.kind,
            session_key=self.session_key,
            score=self.score,
        )
