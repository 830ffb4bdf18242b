"""``ctxstream serve``: the HTTP API's collaborators, started before uvicorn serves the app.

The key directory reads the deployment's `api-keys` topic to its end (creating
the topic when the deployment predates it) and then follows it; the client
connects its producer. Only then does uvicorn bind and serve
(:func:`ctxstream.api.app.build_app`), so the first request already sees every
key, and a broker that cannot be reached stops the command before it listens.
It also follows `dead-letters` for the sessions over their size cap
(:mod:`ctxstream.api.oversized_sessions`) and holds the tenants' budgets
(:mod:`ctxstream.api.tenant_budgets`); uvicorn bounds the connections
(``HTTP_MAX_CONNECTIONS``, 503 past it), the header size
(``HTTP_MAX_HEADER_BYTES``) and idle keep-alive (``HTTP_KEEP_ALIVE_S``).
Stopping (SIGINT or SIGTERM) lets open requests finish for up to
``HTTP_SHUTDOWN_S``, ends the subscriptions, then closes the client and the
directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import uvicorn

from ctxstream.api.auth import Authenticator
from ctxstream.api.health import BrokerHealth
from ctxstream.api.key_store import KeyDirectory, ensure_keys_topic
from ctxstream.api.metrics import ApiMetrics
from ctxstream.api.oversized_sessions import OversizedSessions
from ctxstream.api.services import ApiServices
from ctxstream.api.settings import ServeSettings
from ctxstream.api.tenant_budgets import TenantBudgets
from ctxstream.broker_calls import broker_calls
from ctxstream.client import Client
from ctxstream.partition_counts import known_partition_count
from ctxstream.sessions.catalog import SessionCatalog
from ctxstream.sessions.connections import ConnectionPool
from ctxstream.subscription import CONNECT_TIMEOUT_S
from schemas.masked_dsn import masked_dsn

logger = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def started_services(settings: ServeSettings) -> AsyncIterator[ApiServices]:
    """The API's collaborators, started, while the block runs.

    Raises:
        BrokerUnavailableError: The broker did not answer within 30 s.
    """
    keys = KeyDirectory(settings, max_staleness_s=settings.http_keys_max_staleness_s)
    client = Client(settings=settings)
    oversized = OversizedSessions(settings, max_sessions=settings.http_max_oversized_sessions)
    try:
        async with broker_calls(settings.kafka_bootstrap, CONNECT_TIMEOUT_S):
            await ensure_keys_topic(settings)
            await keys.catch_up()
            await client.start()
            partitions = await known_partition_count(
                settings.kafka_bootstrap,
                settings.topic("events"),
                security=settings.client_security(),
            )
        keys.follow()
        logger.info("api keys read live=%d topic=%s", len(keys.records), settings.topic("api-keys"))
        auth = Authenticator(
            keys,
            waiting=settings.http_key_checks_waiting,
            failures_remembered=settings.http_failed_keys_remembered,
            refusal_delay_s=settings.http_refused_key_delay_s,
        )
        budgets = TenantBudgets(settings, time.monotonic)
        metrics = ApiMetrics(budgets)
        health = BrokerHealth(
            settings,
            fresh_s=settings.http_health_cache_s,
            clock=time.monotonic,
            on_probe=metrics.broker_probed,
        )
        pool, catalog = _catalog(settings, partitions)
        try:
            async with oversized.following():
                yield ApiServices(
                    settings,
                    client,
                    keys,
                    auth,
                    asyncio.Event(),
                    budgets,
                    oversized,
                    metrics,
                    health,
                    catalog,
                )
        finally:
            try:
                await health.close()
            finally:
                if pool is not None:
                    await pool.close()
    finally:
        try:
            await client.stop()
        finally:
            await keys.close()


def _catalog(
    settings: ServeSettings, partitions: int
) -> tuple[ConnectionPool | None, SessionCatalog | None]:
    """The read model's catalog when a DSN is set (its connections open as reads need them).

    `partitions`: of `events` (0: unknown), which places a session a history read waits for.
    """
    dsn = settings.postgres_dsn.get_secret_value()
    if not dsn.strip():
        logger.info("read model off: CTXSTREAM_POSTGRES_DSN is not set")
        return None, None
    pool = ConnectionPool(dsn, size=settings.http_read_model_connections)
    logger.info("read model schema=%s dsn=%s", settings.sink_schema, masked_dsn(dsn))
    catalog = SessionCatalog(
        pool, schema=settings.sink_schema, events_partitions=partitions or None
    )
    return pool, catalog


async def serve(settings: ServeSettings) -> None:
    """Serve the HTTP API until SIGINT or SIGTERM.

    Raises:
        BrokerUnavailableError: The broker did not answer at start.
        OSError: The address cannot be bound.
    """
    from ctxstream.api.app import build_app

    async with started_services(settings) as services:
        config = uvicorn.Config(
            build_app(services),
            host=settings.http_bind,
            port=settings.http_port,
            lifespan="off",
            log_config=None,  # the command configured logging
            timeout_graceful_shutdown=settings.http_shutdown_s,
            server_header=False,
            proxy_headers=False,
            # h11 explicitly: the header bound below is h11's (uvicorn's httptools has none).
            http="h11",
            h11_max_incomplete_event_size=settings.http_max_header_bytes,
            limit_concurrency=settings.http_max_connections,
            timeout_keep_alive=settings.http_keep_alive_s,
        )
        server = _Server(config, services.stopping)
        with _quiet_sigterm():
            await server.serve()
        if not server.started:
            raise OSError(f"cannot serve on {settings.http_bind}:{settings.http_port}")


class _Server(uvicorn.Server):
    """uvicorn's server, which ends the open subscriptions as it begins to stop.

    Otherwise a subscription, which never ends by itself, would hold the
    shutdown for the whole ``HTTP_SHUTDOWN_S`` and then be cancelled.
    """

    def __init__(self, config: uvicorn.Config, stopping: asyncio.Event) -> None:
        super().__init__(config)
        self._stopping = stopping

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._stopping.set()
        await super().shutdown(sockets)


@contextlib.contextmanager
def _quiet_sigterm() -> Iterator[None]:
    """SIGTERM does nothing while the block runs, outside uvicorn's own handling of it.

    Once uvicorn has shut down it raises the signal that stopped it again, with
    the handler it found: SIGINT then ends ``asyncio.run`` as a KeyboardInterrupt
    after :func:`started_services` has closed everything, but SIGTERM's default
    would kill the process before that.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
