"""Subscriptions that end by a disconnect leave no broker connection and no task behind.

A ``ctxstream serve`` process (and, for the tasks, the same app served by
uvicorn in the test's own event loop) subscribes a dozen clients to the
package's filled `projections` topic, which then go away in the ways real
clients do: one reads a few snapshots and closes, one never reads and gives up
(as ``curl --max-time`` does), one closes an idle stream, and the server stops
under open ones. Each time, the server's established connections to the
broker's port come back to what they were before the subscribers (review
finding N-H1, probe P4: each disconnect used to leave its Kafka reader
connected for as long as the server ran).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiohttp
import pytest
import uvicorn

from ctxstream.api.app import build_app
from ctxstream.api.server import started_services
from ctxstream.api.settings import ServeSettings
from streams.projector_settings import ProjectorSettings
from tests.conftest import free_ports
from tests.support.http_api import Server, create_key, sse_events, start_server
from tests.support.kafka import stop_worker, wait_for
from tests.support.sockets import connections_to
from tests.support.subscriptions import Projections

pytestmark = pytest.mark.integration

SUBSCRIBERS: Final = 12
#: The server's budgets, raised so that one tenant may hold every subscriber of a test.
ROOMY: Final = {"http_tenant_max_subscriptions": str(SUBSCRIBERS)}
#: Connecting, placing a reader and sending the first snapshots, a dozen at once on two cores.
OPENED_WITHIN_S: Final = 60.0
#: The server noticing the disconnects and closing the readers (each close is bounded by 10 s).
CLOSED_WITHIN_S: Final = 30.0
STOPPED_WITHIN_S: Final = 30.0
PATH: Final = "/v1/tenants/acme/projections:subscribe"

#: A subscriber: opened on entering, gone (in its own way) on leaving.
Subscriber = Callable[["Target"], AbstractAsyncContextManager[None]]


@dataclass(frozen=True)
class Target:
    """Where a subscriber connects, with which key."""

    port: int
    key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@contextlib.asynccontextmanager
async def reads_a_few_then_closes(target: Target) -> AsyncIterator[None]:
    """Reads two snapshots from the topic's beginning, then closes the connection."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(target.url, params={"from_offset": "0"}, headers=target.headers) as response,
    ):
        assert response.status == 200, await response.text()
        events = sse_events(response)
        for _ in range(2):
            assert (await anext(events)).event == "snapshot"
        yield


@contextlib.asynccontextmanager
async def never_reads_and_gives_up(target: Target) -> AsyncIterator[None]:
    """Sends its request, reads nothing, and gives up (``curl --max-time`` that never read)."""
    _, writer = await asyncio.open_connection("127.0.0.1", target.port)
    writer.write(
        f"GET {PATH}?from_offset=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {target.key}\r\n\r\n".encode()
    )
    await writer.drain()
    try:
        yield
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@contextlib.asynccontextmanager
async def closes_an_idle_stream(target: Target) -> AsyncIterator[None]:
    """Subscribes from now on (nothing comes but pings), then closes mid-stream."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(target.url, headers=target.headers) as response,
    ):
        assert response.status == 200, await response.text()
        yield


SUBSCRIBERS_BY_KIND: Final[dict[str, Subscriber]] = {
    "reads a few then closes": reads_a_few_then_closes,
    "never reads and gives up": never_reads_and_gives_up,
    "closes an idle stream": closes_an_idle_stream,
}


@dataclass(frozen=True)
class Served:
    """The package's filled deployment, a key of its subscribed tenant, and its settings."""

    settings: ProjectorSettings
    key: str


@pytest.fixture(scope="module")
def served(projections: Projections) -> Served:
    settings = projections.settings
    assert isinstance(settings, ProjectorSettings)
    return Served(settings, create_key(settings, "acme"))


@pytest.fixture(scope="module")
def server(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("subscription-close") / "serve.log"
    running = start_server(served.settings, free_ports(1)[0], log, **ROOMY)
    try:
        yield running
    finally:
        stop_worker(running.process)


def _broker_port(settings: ProjectorSettings) -> int:
    return int(settings.kafka_bootstrap.rsplit(":", 1)[1])


async def _held_and_released(
    pid: int, broker_port: int, subscribers: list[AbstractAsyncContextManager[None]]
) -> None:
    """Open `subscribers`, see them connected to the broker, leave them; see that undone."""
    before = connections_to(pid, broker_port)
    async with contextlib.AsyncExitStack() as open_ones:
        await asyncio.wait_for(
            asyncio.gather(*(open_ones.enter_async_context(one) for one in subscribers)),
            OPENED_WITHIN_S,
        )

        async def connected() -> bool:
            return connections_to(pid, broker_port) >= before + len(subscribers)

        await wait_for("each subscriber's reader connected", connected, OPENED_WITHIN_S)

    held = [connections_to(pid, broker_port)]

    async def released() -> bool:
        held.append(connections_to(pid, broker_port))
        return held[-1] <= before

    try:
        await wait_for("the server's broker connections back", released, CLOSED_WITHIN_S)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {held[-1]} held, {before} before the subscribers") from exc


@pytest.mark.parametrize("kind", list(SUBSCRIBERS_BY_KIND))
async def test_subscribers_that_go_away_leave_no_broker_connection(
    served: Served, server: Server, kind: str
) -> None:
    target = Target(int(server.url.rsplit(":", 1)[1]), served.key)
    subscriber = SUBSCRIBERS_BY_KIND[kind]
    await _held_and_released(
        server.process.pid,
        _broker_port(served.settings),
        [subscriber(target) for _ in range(SUBSCRIBERS)],
    )
    assert server.process.poll() is None


async def test_a_server_stopping_under_open_subscribers_closes_every_reader(
    served: Served, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    stopping = await asyncio.to_thread(
        start_server, served.settings, free_ports(1)[0], log, **ROOMY
    )
    target = Target(int(stopping.url.rsplit(":", 1)[1]), served.key)
    try:
        async with contextlib.AsyncExitStack() as open_ones:
            for kind in (reads_a_few_then_closes, closes_an_idle_stream):
                for _ in range(SUBSCRIBERS // 2):
                    await open_ones.enter_async_context(kind(target))
            stopping.process.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(stopping.process.wait, STOPPED_WITHIN_S)
        assert code == 0
    finally:
        stop_worker(stopping.process)
    text = log.read_text()
    assert "Unclosed AIOKafka" not in text
    assert "Task was destroyed but it is pending" not in text
    assert "close abandoned" not in text
    assert "Traceback" not in text


async def test_the_app_in_this_loop_is_left_with_no_task_and_no_connection(
    served: Served,
) -> None:
    # The same app ctxstream serve runs, served by uvicorn in this event loop, so that
    # what a disconnect leaves behind shows in asyncio.all_tasks().
    port = free_ports(1)[0]
    settings = ServeSettings(
        kafka_bootstrap=served.settings.kafka_bootstrap,
        topic_prefix=served.settings.topic_prefix,
        http_port=port,
        http_tenant_max_subscriptions=SUBSCRIBERS,
    )
    target = Target(port, served.key)
    async with started_services(settings) as services:
        config = uvicorn.Config(
            build_app(services), host="127.0.0.1", port=port, lifespan="off", log_config=None
        )
        server = uvicorn.Server(config)
        serving = asyncio.ensure_future(server.serve())
        try:
            await wait_for("uvicorn serving", _true_when(lambda: server.started), 30.0)
            # The server's own readers (the keys' follower) start a task per fetch: what
            # counts is how many tasks of each kind run, at most as many as before.
            before = Counter[str]()
            for _ in range(10):
                before |= _running_tasks()
                await asyncio.sleep(0.1)
            subscribers = [kind(target) for kind in SUBSCRIBERS_BY_KIND.values() for _ in range(4)]
            await _held_and_released(os.getpid(), _broker_port(served.settings), subscribers)
            left: list[Counter[str]] = []

            async def no_task_left() -> bool:
                left.append(_running_tasks() - before)
                return not left[-1]

            try:
                await wait_for("the subscriptions' tasks ended", no_task_left, CLOSED_WITHIN_S)
            except AssertionError as exc:
                raise AssertionError(f"{exc}: left {dict(left[-1])}") from exc
        finally:
            services.stopping.set()
            server.should_exit = True
            await serving


def _running_tasks() -> Counter[str]:
    """How many tasks of each coroutine run in this loop, by the coroutine's name."""
    return Counter(
        getattr(task.get_coro(), "__qualname__", repr(task.get_coro()))
        for task in asyncio.all_tasks()
    )


def _true_when(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def checked() -> bool:
        return check()

    return checked
