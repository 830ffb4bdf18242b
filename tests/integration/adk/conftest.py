"""A deployment for the ADK services' tests: a projector, a sink, a fresh read-model schema.

``adk_deployment`` (per module): the deployment's topics, one native worker serving its
reads (pipeline compaction that never fires, so only what the tests append is stored),
and a ``ctxstream sink`` process into a migrated schema of its own
(:func:`adk_deployment_of` builds one with other compaction settings and, if asked,
a ``ctxstream summarizer``). ``session_service``:
the test parametrized over ADK's own ``InMemorySessionService`` (the oracle) and
``ctxstream.adk.SessionService`` of that deployment; the test body is the same for both.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from google.adk.sessions import BaseSessionService, DatabaseSessionService, InMemorySessionService

from ctxstream.adk.session_service import SessionService
from projections.compaction.config import CompactionConfig
from tests.integration.ctxstream.test_http_sessions import _migrated
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import sink_settings, start_sink_process
from tests.support.kafka import CLI_COMMAND, stop_worker, worker_env
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
    bootstrap: str = ""
    prefix: str = ""

    def uri_for(self, tenant: str, *, view: str = "full") -> str:
        """The service URI of `tenant` on this deployment, in `view`."""
        return f"ctxstream://{self.bootstrap}/?tenant={tenant}&prefix={self.prefix}&view={view}"


@contextlib.contextmanager
def adk_deployment_of(
    kafka_bootstrap: str,
    postgres_dsn: str,
    folder: Path,
    *,
    compaction: CompactionConfig = NO_COMPACTION,
    compaction_overrides: Mapping[str, CompactionConfig] | None = None,
    summarizer: bool = False,
) -> Iterator[AdkDeployment]:
    """A deployment's topics, its worker, a sink into a fresh schema (and a summarizer)."""
    schema = fresh_schema_name()
    asyncio.run(_migrated(postgres_dsn, schema))
    overrides = dict(compaction_overrides or {})
    with (
        serving_worker(
            kafka_bootstrap, folder, "adk", compaction=compaction, compaction_overrides=overrides
        ) as settings,
        contextlib.ExitStack() as processes,
    ):
        prefix = settings.topic_prefix
        sink = start_sink_process(
            sink_settings(
                kafka_bootstrap, prefix, postgres_dsn, schema, settings.events_partitions
            ),
            folder / "sink.log",
        )
        processes.callback(stop_worker, sink)
        if summarizer:
            processes.callback(stop_worker, _start_summarizer(kafka_bootstrap, prefix, folder))
        try:
            uri = f"ctxstream://{kafka_bootstrap}/?tenant={TENANT}&prefix={prefix}"
            yield AdkDeployment(uri, postgres_dsn, schema, kafka_bootstrap, prefix)
        finally:
            processes.close()
            drop_schema(postgres_dsn, schema)


def _start_summarizer(bootstrap: str, prefix: str, folder: Path) -> subprocess.Popen[bytes]:
    """``ctxstream summarizer`` of the deployment (its default, extractive summaries)."""
    env = {**os.environ, **worker_env(bootstrap, prefix, f"{prefix}-summarizer")}
    with (folder / "summarizer.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", *CLI_COMMAND],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


@pytest.fixture(scope="module")
def adk_deployment(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdkDeployment]:
    with adk_deployment_of(kafka_bootstrap, postgres_dsn, tmp_path_factory.mktemp("adk")) as found:
        yield found


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


@pytest.fixture
async def adk_database(tmp_path: Path) -> AsyncIterator[DatabaseSessionService]:
    """ADK's own database service on SQLite: the staleness oracle."""
    database = DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.db'}")
    try:
        yield database
    finally:
        await database.close()


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
