"""Memory records through the real broker and PostgreSQL: replayed alike, bad ones dead-lettered.

A load of sessions carrying memory records (both modes) is sunk twice, into two fresh schemas
with different batch sizes: the memories and memory records must be equal, so a replay from
offset 0 keeps every explicit add and delete. A malformed memory record is dead-lettered with
its reason (stage ``decode``) and the sink goes on. A sink given an embedder (a local
server speaking the protocol) embeds the memories after its batches.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import cast

import pytest
from psycopg import sql
from pydantic import SecretStr

from projections.history.event_status import EventStatus
from schemas.codec import decode_dead_letter, encode
from schemas.keys import SessionKey
from schemas.memory_mark import MemoryMark, memory_mark_event
from streams.embeddings.openai_http import HttpEmbedder
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.worker import Sink
from tests.integration.streams.sink.read_model_oracle import fetch
from tests.integration.streams.sink.sink_load import (
    Record,
    produce,
    running_sink,
    sink_settings,
    wait_caught_up,
)
from tests.integration.streams.sink.test_read_model import interleaved, session_records
from tests.support.embeddings_server import KEY, MODEL, embeddings_server, vector_of
from tests.support.events import envelope, text_event
from tests.support.kafka import create_topics_for, read_all

PARTITIONS = 2
_MEMORIES = (
    'SELECT session_key, memory_id, partition, "offset", author, kind, text FROM {}.memories'
)
_MARKS = 'SELECT partition, "offset", session_key, action, ids FROM {}.memory_marks'


async def _load(
    conn: Connection, dsn: str, schema: str, bootstrap: str, topic: str, batch: int
) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    settings = sink_settings(bootstrap, topic, dsn, schema, PARTITIONS)
    settings = settings.model_copy(update={"sink_batch_records": batch, "memory_apps": "mem"})
    await migrate(conn, schema)
    async with running_sink(settings):
        await wait_caught_up(conn, schema, bootstrap, settings.topic("events"))
    memories = {tuple(row) for row in await fetch(conn, schema, _MEMORIES)}
    marks = {
        (*row[:4], None if row[4] is None else tuple(cast(list[str], row[4])))
        for row in await fetch(conn, schema, _MARKS)
    }
    return memories, marks


async def test_a_replay_into_a_fresh_schema_keeps_every_explicit_add_and_delete(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=PARTITIONS, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, make_schema(), PARTITIONS)
    transactions = [(records, True) for records in interleaved(session_records(), seed=7)]
    await produce(kafka_bootstrap, settings.topic("events"), transactions)
    first = await _load(conn, postgres_dsn, make_schema(), kafka_bootstrap, topic, batch=23)
    again = await _load(conn, postgres_dsn, make_schema(), kafka_bootstrap, topic, batch=5_000)
    memories, marks = first
    assert len(marks) > 40
    assert {mark[3] for mark in marks} == {"add", "delete"}
    assert any(mark[4] is not None for mark in marks)
    assert any(mark[4] is None for mark in marks)
    assert any("/gen/" in str(memory[0]) for memory in memories)  # explicit mode, added
    assert again == first


async def test_a_malformed_memory_record_is_dead_lettered_and_the_sink_goes_on(
    conn: Connection, schema: str, postgres_dsn: str, kafka_bootstrap: str, topic: str
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=1, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, 1)
    settings = settings.model_copy(update={"memory_apps": ""})  # every app explicit
    key = SessionKey("acme/app/u1/s1")
    said = text_event("e1", "inv1", 1.0, "My sister Ingrid loves sushi")
    add = memory_mark_event(MemoryMark("add"), event_id="m1", timestamp=2.0)
    bad = json.loads(encode(envelope(key, add)))
    bad["event"]["customMetadata"]["ctxstream"]["memory"]["action"] = "forget"
    records: list[Record] = [
        (key.encode(), encode(envelope(key, said))),
        (key.encode(), json.dumps(bad).encode()),
        (key.encode(), encode(envelope(key, add))),
    ]
    await produce(kafka_bootstrap, settings.topic("events"), [(records, True)])
    await migrate(conn, schema)
    async with running_sink(settings):
        await wait_caught_up(conn, schema, kafka_bootstrap, settings.topic("events"))
    letters = [
        decode_dead_letter(r.value)
        for r in await read_all(kafka_bootstrap, settings.topic("dead-letters"))
    ]
    assert [(d.source_partition, d.source_offset, d.stage) for d in letters] == [(0, 1, "decode")]
    assert "malformed memory record" in letters[0].reason
    assert "'add' or 'delete', got 'forget'" in letters[0].reason
    rows = await fetch(conn, schema, 'SELECT "offset", status FROM {}.event_rows ORDER BY 1')
    assert rows == [(0, "live"), (2, str(EventStatus.MEMORY))]
    memories = await fetch(conn, schema, 'SELECT memory_id, "offset", text FROM {}.memories')
    assert memories == [("e1", 0, "My sister Ingrid loves sushi")]
    cursor = await conn.execute(
        sql.SQL("SELECT deleted, created FROM {}").format(sql.Identifier(schema, "sessions"))
    )
    assert await cursor.fetchall() == [(False, 1.0)]


async def test_a_sink_with_an_embedder_embeds_its_memories_after_the_batch(
    conn: Connection, schema: str, postgres_dsn: str, kafka_bootstrap: str, topic: str
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=1, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, 1)
    key = SessionKey("acme/app/u1/s1")
    texts = ["My sister Ingrid loves sushi", "The flight leaves from terminal 2"]
    records: list[Record] = [
        (key.encode(), encode(envelope(key, text_event(f"e{n}", "inv1", float(n), said))))
        for n, said in enumerate(texts)
    ]
    await produce(kafka_bootstrap, settings.topic("events"), [(records, True)])
    await migrate(conn, schema)
    async with embeddings_server() as server:
        embedder = HttpEmbedder(server.base_url, MODEL, SecretStr(KEY))
        stop = asyncio.Event()
        task = asyncio.create_task(Sink(settings, embedder).run(stop))
        try:
            await wait_caught_up(conn, schema, kafka_bootstrap, settings.topic("events"))
            query = "SELECT memory_id, embedding FROM {}.memories WHERE embedding IS NOT NULL"
            deadline = asyncio.get_running_loop().time() + 60
            while len(rows := await fetch(conn, schema, query + " ORDER BY 1")) < len(texts):
                assert asyncio.get_running_loop().time() < deadline, rows
                await asyncio.sleep(0.2)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
    assert server.authorizations[0] == f"Bearer {KEY}"
    for (memory_id, stored), said in zip(rows, texts, strict=True):
        assert memory_id == f"e{texts.index(said)}"
        expected = vector_of(said)
        norm = math.hypot(*expected)
        assert stored == pytest.approx([x / norm for x in expected], abs=1e-6)
