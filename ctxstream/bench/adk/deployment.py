"""The ctxstream side of ``ctxstream bench adk``: a deployment of its own, loaded as users load it.

:func:`ctxstream_deployment` creates fresh topics (``bench-adk-<hex>.*``) and a fresh, migrated
sink schema, starts the projector (``python -m ctxstream worker``) and the sink (``python -m
ctxstream sink``) as child processes (:mod:`ctxstream.bench.processes`), and points this
process's ``ctxstream.adk.SessionService`` at them (``CTXSTREAM_POSTGRES_DSN``,
``CTXSTREAM_SINK_SCHEMA``, ``CTXSTREAM_COMPACTION_OVERRIDES``: ADK owns the app's compaction,
with the workload's config). :func:`load_session` creates the session through the service and
appends its events with ``ctxstream.Client.append_many``, then waits until the sink stored
every end offset of the events topic. The service is reached only through ADK's API.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from google.adk.sessions.base_session_service import BaseSessionService

from ctxstream.bench.adk.workload import APP_NAME, EVENT_RETENTION_SIZE, TOKEN_THRESHOLD, AdkSession
from ctxstream.bench.ingest import end_offsets
from ctxstream.bench.memory_schema import drop_schema
from ctxstream.bench.processes import (
    PROJECTOR,
    kafka_env,
    projector_env,
    start_worker,
    stop_worker,
)
from ctxstream.client import Client
from streams.projector_settings import ProjectorSettings
from streams.sink.database import connect
from streams.sink.fence import stored_offsets
from streams.sink.migrate import migrate
from streams.topics import create_topics

TENANT: Final = "bench"
APPEND_CHUNK: Final = 500
CATCH_UP_TIMEOUT_S: Final = 600.0
POLL_S: Final = 0.05
SINK: Final = ["ctxstream", "sink"]
#: The workload's App: ADK compacts (token threshold); the pipeline folds its summaries.
COMPACTION: Final = {
    "token_threshold": TOKEN_THRESHOLD,
    "event_retention_size": EVENT_RETENTION_SIZE,
}


@dataclass(frozen=True, slots=True)
class Deployment:
    """The benchmark's deployment: its topics, its sink schema and the database."""

    settings: ProjectorSettings
    dsn: str
    schema: str

    def uri(self, view: str) -> str:
        """The ``ctxstream://`` URI of a session service of this deployment in `view`."""
        return (
            f"ctxstream://{self.settings.kafka_bootstrap}/"
            f"?tenant={TENANT}&prefix={self.settings.topic_prefix}&view={view}"
        )


def session_service(deployment: Deployment, view: str) -> BaseSessionService:
    """``ctxstream.adk.SessionService`` on `deployment` in `view` (``full`` or ``live``).

    Raises:
        RuntimeError: ``ctxstream.adk`` has no ``SessionService`` (not installed or merged).
    """
    try:
        factory = importlib.import_module("ctxstream.adk").SessionService
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(f"bench adk: ctxstream.adk.SessionService is missing ({exc})") from exc
    service = factory(deployment.uri(view))
    if not isinstance(service, BaseSessionService):
        raise TypeError(f"bench adk: ctxstream.adk.SessionService made a {type(service)}")
    return service


async def close_service(service: BaseSessionService) -> None:
    """Await the service's ``close()`` when it has one (ADK's base class has none)."""
    close = getattr(service, "close", None)
    if callable(close):
        await close()


@asynccontextmanager
async def ctxstream_deployment(
    dsn: str, run_dir: Path, *, keep: bool = False
) -> AsyncIterator[Deployment]:
    """Fresh topics and schema, the projector and the sink running on them; dropped after."""
    prefix = f"bench-adk-{uuid.uuid4().hex[:12]}"
    settings = ProjectorSettings().model_copy(update={"topic_prefix": prefix})
    deployment = Deployment(settings, dsn, f"bench_adk_{prefix[10:]}")
    await create_topics(settings)
    conn = await connect(dsn)
    try:
        await migrate(conn, deployment.schema)
        folder = run_dir / prefix
        folder.mkdir(parents=True, exist_ok=True)
        env = _service_env(deployment)
        projector = await start_worker(
            "projector",
            PROJECTOR,
            env
            | projector_env(settings, data_dir=folder, compaction=COMPACTION, batch_within_s=0.02),
            folder,
        )
        try:
            sink = await start_worker("sink", SINK, env | kafka_env(settings), folder)
            try:
                with _environment(env):
                    yield deployment
            finally:
                await stop_worker(sink)
        finally:
            await stop_worker(projector)
    finally:
        if not keep:
            await drop_schema(conn, deployment.schema)
        await conn.close()


def _service_env(deployment: Deployment) -> dict[str, str]:
    overrides = {f"{TENANT}/{APP_NAME}": {"owner": "adk", **COMPACTION}}
    return {
        "CTXSTREAM_POSTGRES_DSN": deployment.dsn,
        "CTXSTREAM_SINK_SCHEMA": deployment.schema,
        "CTXSTREAM_COMPACTION_OVERRIDES": json.dumps(overrides),
    }


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment (the service reads them), restored after."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def load_session(deployment: Deployment, session: AdkSession) -> None:
    """Create `session` through the service, append its events, wait for the sink."""
    service = session_service(deployment, "full")
    try:
        await service.create_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
        )
    finally:
        await close_service(service)
    key = f"{TENANT}/{session.app_name}/{session.user_id}/{session.session_id}"
    records = [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in session.events]
    async with Client(settings=deployment.settings) as client:
        for start in range(0, len(records), APPEND_CHUNK):
            await client.append_many(key, records[start : start + APPEND_CHUNK])
    await wait_for_sink(deployment)


async def wait_for_sink(deployment: Deployment) -> None:
    """Return once the sink stored every end offset of the events topic.

    Raises:
        TimeoutError: It did not within :data:`CATCH_UP_TIMEOUT_S`.
    """
    topic = deployment.settings.topic("events")
    ends = await end_offsets(deployment.settings.kafka_bootstrap, topic)
    wanted = {tp.partition: end for tp, end in ends.items() if end > 0}
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    conn = await connect(deployment.dsn)
    try:
        while await stored_offsets(conn, deployment.schema, topic, wanted) != wanted:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the sink did not store {wanted} in {CATCH_UP_TIMEOUT_S} s")
            await asyncio.sleep(POLL_S)
    finally:
        await conn.close()
