"""A deployment for the ADK memory service's tests: topics, a sink, a fresh read-model schema.

No projector: the memory service appends memory records and reads the SQL read model only.
The sink runs as ``ctxstream sink`` in explicit memory mode (``CTXSTREAM_MEMORY_APPS``
empty), as ADK's memory services are: only memory records make memories.
``memory_service``: a :class:`ctxstream.adk.MemoryService` of that deployment, closed at
the end; ``log_client``: a client appending ADK events to it as the session service does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from google.adk.memory.base_memory_service import BaseMemoryService

from ctxstream import Client
from ctxstream.adk import MemoryService
from schemas.kafka.settings import KafkaSettings
from streams.sink.database import connect
from streams.sink.migrate import migrate
from tests.conftest import unique_topic
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import sink_settings, start_sink_process
from tests.support.kafka import create_topics_for, stop_worker

TENANT: Final = "adkmem"
PARTITIONS: Final = 2


@dataclass(frozen=True)
class MemoryDeployment:
    """Where the memory service under test writes and reads."""

    uri: str
    bootstrap: str
    prefix: str
    dsn: str
    schema: str
    folder: Path


async def _prepared(bootstrap: str, prefix: str, dsn: str, schema: str) -> None:
    await create_topics_for(bootstrap, prefix, events_partitions=PARTITIONS, partitions=1)
    conn = await connect(dsn)
    try:
        await migrate(conn, schema)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def memory_deployment(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MemoryDeployment]:
    """Topics, a migrated schema and its sink (explicit memory mode) for one test module."""
    folder = tmp_path_factory.mktemp("adkmem")
    prefix, schema = unique_topic(), fresh_schema_name()
    asyncio.run(_prepared(kafka_bootstrap, prefix, postgres_dsn, schema))
    settings = sink_settings(kafka_bootstrap, prefix, postgres_dsn, schema, PARTITIONS)
    sink = start_sink_process(settings.model_copy(update={"memory_apps": ""}), folder / "sink.log")
    try:
        uri = f"ctxstream://{kafka_bootstrap}/?tenant={TENANT}&prefix={prefix}"
        yield MemoryDeployment(uri, kafka_bootstrap, prefix, postgres_dsn, schema, folder)
    finally:
        stop_worker(sink)
        drop_schema(postgres_dsn, schema)


@pytest.fixture
async def memory_service(
    memory_deployment: MemoryDeployment, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MemoryService]:
    """The drop-in memory service of the module's deployment (``agents_dir`` passed, ignored)."""
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", memory_deployment.dsn)
    monkeypatch.setenv("CTXSTREAM_SINK_SCHEMA", memory_deployment.schema)
    service = MemoryService(memory_deployment.uri, agents_dir="/nowhere")
    try:
        yield service
    finally:
        await service.close()


@pytest.fixture
async def log_client(memory_deployment: MemoryDeployment) -> AsyncIterator[Client]:
    """A client of the deployment (no projector: no duplicate look-up)."""
    settings = KafkaSettings(
        kafka_bootstrap=memory_deployment.bootstrap,
        topic_prefix=memory_deployment.prefix,
        duplicate_lookup_timeout_s=0,
    )
    async with Client(settings=settings) as client:
        yield client


Found = set[tuple[str | None, str | None, str | None, str | None, str]]


async def found(service: BaseMemoryService, app: str, user: str, query: str) -> Found:
    """What a search of `service` finds: (id, author, timestamp, role, text) of each memory."""
    response = await service.search_memory(app_name=app, user_id=user, query=query)
    return {
        (
            m.id,
            m.author,
            m.timestamp,
            m.content.role,
            "".join(p.text or "" for p in m.content.parts or []),
        )
        for m in response.memories
    }
