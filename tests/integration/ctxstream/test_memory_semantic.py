"""Semantic ranking against a local server that speaks the OpenAI embeddings protocol.

The server (tests/support/embeddings_server.py, aiohttp in the test's loop) answers
``POST /v1/embeddings`` with deterministic vectors: a bag of concepts (food, family,
travel) plus hashed other words, so which memories are "near" a question is known by hand.
The sink's embedding pass fills the vectors into the real PostgreSQL; the expected order
and scores are computed here from the server's vectors and the README's formula, never
through the search's SQL.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow
from pydantic import SecretStr

from ctxstream.memory import MemoryStore
from streams.embeddings.embedder import EmbeddingError
from streams.embeddings.openai_http import HttpEmbedder
from streams.sink.read_model.memory_embeddings import EmbeddingPass, embed_pending
from tests.integration.ctxstream.test_memory_search import facts, memory, write
from tests.support.embeddings_server import (
    KEY,
    MODEL,
    Server,
    cosine,
    embeddings_server,
    vector_of,
)
from tests.support.memory_schema import fresh_memory_schema

pytestmark = pytest.mark.integration


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with embeddings_server() as state:
        yield state


@pytest.fixture
async def memory_schema(postgres_dsn: str) -> AsyncIterator[tuple[AsyncConnection[TupleRow], str]]:
    async with fresh_memory_schema(postgres_dsn, "test_semantic") as made:
        yield made


Made = tuple[AsyncConnection[TupleRow], str]


def embedder(server: Server) -> HttpEmbedder:
    return HttpEmbedder(server.base_url, MODEL, SecretStr(KEY))


async def unembedded(connection: AsyncConnection[TupleRow], schema: str) -> int:
    cursor = await connection.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE embedding IS NULL").format(
            sql.Identifier(schema, "memories")
        )
    )
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_semantic_ranking_reorders_as_the_vectors_say(
    memory_schema: Made, server: Server
) -> None:
    connection, schema = memory_schema
    await write(connection, schema, facts())
    assert await embed_pending(connection, schema, embedder(server)) == len(facts())
    assert server.authorizations == [f"Bearer {KEY}"]  # the key as a bearer header only
    assert KEY not in server.base_url
    question = "What food does my sister like?"

    lexical = await MemoryStore(connection, schema=schema).search("acme", "support", "u1", question)
    semantic_store = MemoryStore(connection, schema=schema, embedder=embedder(server))
    semantic = await semantic_store.search("acme", "support", "u1", question)

    # Lexically "like" ties the birthday fact (she would like a book) with sushi (she loves).
    assert [e.id for e in lexical[:2]] == ["birthday", "sushi"]
    texts = {m.memory_id: m.text for m in facts()}
    best = max(e.score for e in lexical)
    expected = {
        e.id: 0.5 * e.score / best
        + 0.5 * max(0.0, cosine(vector_of(texts[e.id]), vector_of(question)))
        for e in lexical
    }
    assert [e.id for e in semantic] == sorted(expected, key=lambda i: -expected[i])
    assert semantic[0].id == "sushi"
    for entry in semantic:
        assert entry.score == pytest.approx(expected[entry.id], abs=1e-5)


async def test_a_failing_endpoint_loses_nothing_and_the_pass_catches_up(
    memory_schema: Made, server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    connection, schema = memory_schema
    await write(connection, schema, facts())
    now = [0.0]
    embedding_pass = EmbeddingPass(embedder(server), clock=lambda: now[0])
    server.failing = True
    with caplog.at_level(logging.WARNING):
        assert await embedding_pass.run(connection, schema) == 0
    assert await unembedded(connection, schema) == len(facts())  # rows kept, not embedded
    assert "status 503: overloaded, try later" in caplog.text
    assert KEY not in caplog.text
    server.failing = False
    assert await embedding_pass.run(connection, schema) == 0  # backing off: 1 s not passed
    now[0] = 1.5
    assert await embedding_pass.run(connection, schema) == len(facts())
    assert await unembedded(connection, schema) == 0
    # A search without any embedder still works on the same rows, offline.
    found = await MemoryStore(connection, schema=schema).search(
        "acme", "support", "u1", "Where did I park my car?"
    )
    assert found[0].id == "park"


async def test_a_search_whose_query_cannot_be_embedded_says_why(
    memory_schema: Made, server: Server
) -> None:
    connection, schema = memory_schema
    await write(connection, schema, [memory("sushi", "Ingrid loves sushi")])
    server.failing = True
    store = MemoryStore(connection, schema=schema, embedder=embedder(server))
    with pytest.raises(EmbeddingError, match=r"/v1/embeddings: status 503") as caught:
        await store.search("acme", "support", "u1", "What does Ingrid eat?")
    assert KEY not in str(caught.value)


async def test_memories_without_an_embedding_rank_lexically_only(
    memory_schema: Made, server: Server
) -> None:
    connection, schema = memory_schema
    await write(connection, schema, [memory("sushi", "Ingrid loves sushi")])
    store = MemoryStore(connection, schema=schema, embedder=embedder(server))
    (entry,) = await store.search("acme", "support", "u1", "Does Ingrid eat sushi?")
    assert entry.id == "sushi"
    assert entry.score == pytest.approx(0.5)  # (1 - w) * 1 + w * 0
