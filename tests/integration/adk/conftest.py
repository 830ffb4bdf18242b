"""A deployment for the ADK services' tests: a projector, a sink, a fresh read-model schema.

``adk_deployment`` (per module): the deployment's topics, one native worker serving its
reads (pipeline compaction that never fires, so only what the tests append is stored),
and a ``ctxstream sink`` process into a migrated schema of its own. ``session_service``:
the test parametrized over ADK's own ``InMemorySessionService`` (the oracle) and
``ctxstream.adk.SessionService`` of that deployment; the test body is the same for both.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Final

import pytest
from google.adk.sessions import BaseSessionService, InMemorySessionService

from ctxstream.adk.session_service import SessionService
from projections.compaction.config import CompactionConfig
from tests.integration.ctxstream.test_http_sessions import _migrated
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import sink_settings, start_sink_process
from tests.support.kafka import stop_worker
from tests.support.read_worker import serving_worker

TENANT: Final = "adk"
#: Pipeline compaction that never fires in a test: only the tests' own records are stored.
NO_COMPACTION: Final = CompactionConfig(compaction_interval=1_000_000, overlap_size=0)


@dataclass(frozen=True)
class AdkDeployment:
    """Where the drop-in under test reads and writes."""

    uri: str
    dsn: str
    schema: str


@pytest.fixture(scope="module")
def adk_deployment(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdkDeployment]:
    folder = tmp_path_factory.mktemp("adk")
    schema = fresh_schema_name()
    asyncio.run(_migrated(postgres_dsn, schema))
    with serving_worker(
        kafka_bootstrap, folder, "adk", compaction=NO_COMPACTION, compaction_overrides={}
    ) as settings:
        sink = start_sink_process(
            sink_settings(
                kafka_bootstrap,
                settings.topic_prefix,
                postgres_dsn,
                schema,
                settings.events_partitions,
            ),
            folder / "sink.log",
        )
        try:
            uri = f"ctxstream://{kafka_bootstrap}/?tenant={TENANT}&prefix={settings.topic_prefix}"
            yield AdkDeployment(uri, postgres_dsn, schema)
        finally:
            stop_worker(sink)
            drop_schema(postgres_dsn, schema)


@pytest.fixture
async def ctxstream_service(
    adk_deployment: AdkDeployment, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[SessionService]:
    """The drop-in of the module's deployment, as ADK's registry would build it; closed after."""
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", adk_deployment.dsn)
    monkeypatch.setenv("CTXSTREAM_SINK_SCHEMA", adk_deployment.schema)
    service = SessionService(adk_deployment.uri, agents_dir="/nowhere")
    try:
        yield service
    finally:
        await service.close()


@pytest.fixture(params=["in_memory", "ctxstream"])
def session_service(request: pytest.FixtureRequest) -> BaseSessionService:
    """ADK's in-memory service (the oracle), then the drop-in: the same test runs on both."""
    if request.param == "in_memory":
        return InMemorySessionService()
    service: SessionService = request.getfixturevalue("ctxstream_service")
    return service


@pytest.fixture
def app_name() -> str:
    """An app of the test's own: listings see only its sessions."""
    return f"app_{uuid.uuid4().hex[:12]}"
