"""The native engine's web endpoint: ``/metrics`` (Prometheus text) and ``/healthz``.

Served on ``metrics_bind:metrics_port`` (nothing when the port is 0) with
aiohttp, which faust-streaming already brings and the project declares as a
dependency of its own. Like the faust engine's, it serves no table data.
``/healthz`` answers 200 while the worker makes progress, and 503 with the
reason when records wait to be folded and no batch finished for
``liveness_timeout_s`` (a failed engine stops its process instead).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from aiohttp import web

from streams.liveness import stall
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings

Lag = Callable[[], Awaitable[Mapping[int, int]]]
"""The consumer lag of each owned partition."""
BatchAge = Callable[[float], float]
"""Seconds since the last batch was folded, given the monotonic clock now."""


def web_app(
    settings: ProjectorSettings, metrics: ProjectorMetrics, lag: Lag, batch_age_s: BatchAge
) -> web.Application:
    """The aiohttp application of the two pages."""

    async def metrics_page(request: web.Request) -> web.Response:
        metrics.set_lag(await lag())
        metrics.last_batch_age_seconds.set(batch_age_s(time.monotonic()))
        return web.Response(
            body=metrics.exposition(), headers={"Content-Type": "text/plain; version=0.0.4"}
        )

    async def health_page(request: web.Request) -> web.Response:
        waiting = sum((await lag()).values())
        problem = stall(waiting, batch_age_s(time.monotonic()), settings.liveness_timeout_s)
        return web.Response(text=problem or "ok", status=503 if problem else 200)

    app = web.Application()
    app.router.add_get("/metrics", metrics_page)
    app.router.add_get("/healthz", health_page)
    return app


@contextlib.asynccontextmanager
async def serving(
    settings: ProjectorSettings, metrics: ProjectorMetrics, lag: Lag, batch_age_s: BatchAge
) -> AsyncIterator[None]:
    """Serve the pages while the block runs (not at all when ``metrics_port`` is 0)."""
    if settings.metrics_port == 0:
        yield
        return
    app = web_app(settings, metrics, lag, batch_age_s)
    async with listening(app, settings.metrics_bind, settings.metrics_port):
        yield


@contextlib.asynccontextmanager
async def listening(
    app: web.Application,
    bind: str,
    port: int,
    *,
    shutdown_timeout_s: float = 60.0,
    handler_cancellation: bool = False,
) -> AsyncIterator[int]:
    """Serve `app` on ``bind:port`` while the block runs; yields the port bound (0: the OS's pick).

    On the way out, requests still being answered get `shutdown_timeout_s`.
    With `handler_cancellation`, a request whose client went away has its
    handler cancelled (aiohttp's option), so an abandoned read stops.
    """
    runner = web.AppRunner(
        app,
        access_log=None,
        shutdown_timeout=shutdown_timeout_s,
        handler_cancellation=handler_cancellation,
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, bind, port).start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
