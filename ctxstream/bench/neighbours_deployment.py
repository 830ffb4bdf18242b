"""The deployment ``ctxstream bench neighbours`` measures: served, keyed and prepared.

On fresh topics (``bench-nb-<hex>.*``, three `events` partitions, deleted
afterwards) of the broker of ``CTXSTREAM_KAFKA_BOOTSTRAP``; the steps are in
``ctxstream/bench/README.md`` (neighbours_deployment.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ctxstream.api.commands import create_key
from ctxstream.appends.event_records import event_record
from ctxstream.bench.neighbours_noisy import user_event
from ctxstream.bench.processes import PROJECTOR, kafka_env, start_worker, stop_worker
from ctxstream.client import Client
from schemas.codec import decode_envelope_sized
from schemas.kafka.admin import delete_topics_of
from schemas.kafka.settings import KafkaSettings
from streams.topics import create_topics

HOST: Final = "127.0.0.1"
QUIET_TENANT: Final = "quiet"
NOISY_TENANT: Final = "noisy"
BIG_SESSION: Final = f"{NOISY_TENANT}/noisy/prepared/big"
OVER_CAP_SESSION: Final = f"{NOISY_TENANT}/noisy/prepared/over-cap"
EVENTS_PARTITIONS: Final = 3
#: Events per append call while the prepared sessions are written.
APPEND_CALL_EVENTS: Final = 1_000
#: Items of each of the two arrays of a dense event (half the JSON values a record may hold).
DENSE_ITEMS: Final = 60_000
#: The cap leaves room for the big session and its forks with this much to spare.
CAP_MARGIN: Final = 1.25
#: Small records of the over-cap session within the cap, and over it.
SMALL_WITHIN_CAP: Final = 10
SMALL_OVER_CAP: Final = 5
#: How long the processes may take to answer, and a read to wait, while they start.
START_TIMEOUT_S: Final = 180.0
POLL_S: Final = 0.25


@dataclass(frozen=True, slots=True)
class ServedDeployment:
    """What the benchmark talks to: the API's URL, the keys, the prepared sessions.

    Attributes:
        url: The HTTP API, ``http://127.0.0.1:<port>``.
        quiet_secret: The quiet tenant's key.
        noisy_secret: The noisy tenant's key.
        noisy_key_id: The noisy key's id.
        big_offsets: The big session's offsets, in order.
        over_cap_last_offset: The over-cap session's last offset.
        session_max_bytes: The worker's size cap.
        processes: The projector and the HTTP API.
        run_dir: Where their logs are.
    """

    url: str
    quiet_secret: str
    noisy_secret: str
    noisy_key_id: str
    big_offsets: tuple[int, ...]
    over_cap_last_offset: int
    session_max_bytes: int
    processes: tuple[asyncio.subprocess.Process, ...]
    run_dir: Path

    def exits(self) -> dict[str, int]:
        """The exit status of each process that has exited (``projector``, ``http-api``)."""
        return {
            name: process.returncode
            for name, process in zip(("projector", "http-api"), self.processes, strict=True)
            if process.returncode is not None
        }

    def check_running(self) -> None:
        """Raise :class:`RuntimeError` when the projector or the API has exited."""
        for name, status in self.exits().items():
            log = self.run_dir / f"{name}.log"
            raise RuntimeError(f"{name} exited with status {status} (log: {log})")


def dense_event() -> dict[str, object]:
    """An event of two arrays of :data:`DENSE_ITEMS` zeros: ~0.24 MB, ~20 MB in memory."""
    pad = {"pad0": [0] * DENSE_ITEMS, "pad1": [0] * DENSE_ITEMS}
    return {**user_event("dense"), "customMetadata": pad}


def estimated_bytes(event: dict[str, object]) -> int:
    """What the worker estimates `event` of the over-cap session retains in memory."""
    key, value = event_record(OVER_CAP_SESSION, event, producer_id="estimate")
    return decode_envelope_sized(value, record_key=key)[1]


def size_cap(big_session_events: int) -> tuple[int, int]:
    """The size cap, and how many dense events the over-cap session has.

    The cap holds the big session with :data:`CAP_MARGIN` to spare (a fork of
    it holds as much); it is exactly the over-cap session's dense events plus
    :data:`SMALL_WITHIN_CAP` small ones, so the small ones after those, and
    any record more, are over it.
    """
    small, dense = estimated_bytes(user_event("small")), estimated_bytes(dense_event())
    count = math.ceil(big_session_events * small * CAP_MARGIN / dense)
    return count * dense + SMALL_WITHIN_CAP * small, count


async def _prepare(settings: KafkaSettings, big_events: int, dense: int) -> tuple[list[int], int]:
    """Append the big session and the over-cap one; their offsets and the latter's last."""
    big: list[int] = []
    async with Client(settings=settings, producer_id="bench-neighbours") as client:
        events = [user_event(f"big {index}") for index in range(big_events)]
        for start in range(0, len(events), APPEND_CALL_EVENTS):
            chunk = events[start : start + APPEND_CALL_EVENTS]
            big.extend(await client.append_many(BIG_SESSION, chunk))
        for _ in range(dense):
            await client.append(OVER_CAP_SESSION, dense_event())
        small = [user_event("small")] * (SMALL_WITHIN_CAP + SMALL_OVER_CAP)
        over_cap = await client.append_many(OVER_CAP_SESSION, small)
    return big, over_cap[-1]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def served_deployment(
    base: KafkaSettings, run_dir: Path, big_session_events: int
) -> AsyncIterator[ServedDeployment]:
    """Topics, keys, prepared sessions, the projector and the API; all gone afterwards."""
    prefix = f"bench-nb-{uuid.uuid4().hex[:10]}"
    settings = base.model_copy(
        update={"topic_prefix": prefix, "events_partitions": EVENTS_PARTITIONS}
    )
    run_dir = run_dir / prefix
    run_dir.mkdir(parents=True, exist_ok=True)
    cap, dense = size_cap(big_session_events)
    await create_topics(settings)
    processes: list[asyncio.subprocess.Process] = []
    try:
        quiet = await create_key(settings, QUIET_TENANT)
        noisy = await create_key(settings, NOISY_TENANT)
        big_offsets, over_cap_last = await _prepare(settings, big_session_events, dense)
        projector = {
            **kafka_env(settings),
            "CTXSTREAM_ENGINE": "native",
            "CTXSTREAM_APP_ID": f"{prefix}-projector",
            "CTXSTREAM_DATA_DIR": str(run_dir / "projector"),
            "CTXSTREAM_METRICS_PORT": "0",
            "CTXSTREAM_SESSION_MAX_BYTES": str(cap),
        }
        processes.append(await start_worker("projector", PROJECTOR, projector, run_dir))
        port = _free_port()
        api = {**kafka_env(settings), "CTXSTREAM_HTTP_BIND": HOST, "CTXSTREAM_HTTP_PORT": str(port)}
        processes.append(await start_worker("http-api", ["ctxstream", "serve"], api, run_dir))
        yield ServedDeployment(
            url=f"http://{HOST}:{port}",
            quiet_secret=quiet.secret,
            noisy_secret=noisy.secret,
            noisy_key_id=noisy.record.key_id,
            big_offsets=tuple(big_offsets),
            over_cap_last_offset=over_cap_last,
            session_max_bytes=cap,
            processes=tuple(processes),
            run_dir=run_dir,
        )
    finally:
        for process in reversed(processes):
            await stop_worker(process)
        await delete_topics_of(settings)


async def until_answered(
    deployment: ServedDeployment, what: str, attempt: Callable[[], Awaitable[bool]]
) -> None:
    """Repeat `attempt` until it says True, while the processes run, for :data:`START_TIMEOUT_S`.

    Raises:
        RuntimeError: A process exited, or `what` did not happen in time.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while not await attempt():
        deployment.check_running()
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench neighbours: {what} within {START_TIMEOUT_S:.0f} s")
        await asyncio.sleep(POLL_S)
