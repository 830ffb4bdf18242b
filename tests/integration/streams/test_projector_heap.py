"""A worker that freezes its heap keeps its memory bounded: what it drops leaves memory.

The worker (``python -m ctxstream worker``, native engine, memory store, the
collector in its default mode ``frozen``: the heap frozen after every batch)
folds :data:`ROUNDS` rounds of new sessions through a session cache
(:data:`CACHE_BYTES`) far smaller than one round, so nearly every session
it folds is evicted; halfway through, a second worker joins the group and
leaves again, so the first worker's partitions are revoked (a whole
collection) and come back.

Frozen objects are never walked by the automatic collections, so a policy
that kept them (a reference, or cyclic garbage frozen and never collected)
would keep every evicted session: about ten times its records' raw bytes
(the codec's retained-size estimate, ``schemas.codec.decode_envelope_sized``,
is 4,500 bytes and 170 per JSON value over the raw length; these records are
about 600 bytes). What the worker
may keep beyond its memory after :data:`WARM_ROUNDS` is the table, which the
memory store holds in its heap (the raw bytes of every record folded since,
:data:`COPIES` times for framing and allocation), the fetched records
(``fetched_bytes_bound``) and :data:`SLACK_BYTES`: under half of what the
evicted sessions would keep (the test checks that it is). And the metrics
must show the revocation's whole collection, the log the collector's cost.
"""

from __future__ import annotations

import asyncio
import functools
import urllib.request
from pathlib import Path
from typing import Final

import pytest
from aiokafka import AIOKafkaProducer

from ctxstream.bench.processes import logged_gc
from schemas.codec import decode_envelope_sized, encode
from schemas.envelope import Envelope
from tests.conftest import free_ports, unique_topic
from tests.support.events import envelope, event, session_key
from tests.support.kafka import (
    committed_offsets,
    create_deployment_topics,
    projector_settings,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for,
)
from tests.support.process_memory import status_bytes

pytestmark = pytest.mark.integration

PARTITIONS: Final = 4
ROUNDS: Final = 12
WARM_ROUNDS: Final = 2  # the cache full, the interpreter warm
JOIN_AFTER_ROUND: Final = 6
SESSIONS_PER_ROUND: Final = 150
EVENTS_PER_SESSION: Final = 20
TEXT_CHARS: Final = 200
CACHE_BYTES: Final = 2 * 1024**2  # estimated: a round's sessions are about 28 MB of it
COPIES: Final = 2
SLACK_BYTES: Final = 32 * 1024**2
CATCH_UP_TIMEOUT_S: Final = 120.0
REBALANCE_TIMEOUT_S: Final = 60.0
FIRST_TIMESTAMP: Final = 1_764_480_000.0
WHOLE: Final = "ctxstream_projector_gc_whole_collections_total"


def session_records(number: int) -> list[Envelope]:
    """Session `number`: a question, then answers of :data:`TEXT_CHARS` in one invocation."""
    key = session_key(number)
    question = event(f"s{number}-q", "user", FIRST_TIMESTAMP, [{"text": f"q{number}"}])
    answers = [
        event(
            f"s{number}-a{index}",
            "agent",
            FIRST_TIMESTAMP + 1 + index,
            [{"text": f"{number}:{index}:" + "x" * TEXT_CHARS}],
        )
        for index in range(EVENTS_PER_SESSION - 1)
    ]
    return [envelope(key, e) for e in [question, *answers]]


async def append_round(bootstrap: str, topic: str, index: int) -> tuple[int, int]:
    """Round `index`'s new sessions, acknowledged; their raw bytes, and their estimate.

    The estimate is the bytes a cache of the decoded records would be charged
    (:func:`schemas.codec.decode_envelope_sized`).
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        first = index * SESSIONS_PER_ROUND
        values = [
            (record.session_key.encode(), encode(record))
            for number in range(first, first + SESSIONS_PER_ROUND)
            for record in session_records(number)
        ]
        sent = [await producer.send(topic, key=key, value=value) for key, value in values]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()
    estimate = sum(decode_envelope_sized(value)[1] for _, value in values)
    return sum(len(value) for _, value in values), estimate


def whole_collections(metrics_port: int) -> float:
    """The worker's whole collections so far, from its metrics page."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    (line,) = [line for line in text.splitlines() if line.startswith(f"{WHOLE} ")]
    return float(line.split()[1])


async def test_a_frozen_worker_gives_back_what_it_evicts_and_releases(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    metrics_port, other_port = free_ports(2)
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("heap"),
        events_partitions=PARTITIONS,
        session_cache_bytes=CACHE_BYTES,
        metrics_port=metrics_port,
        # Nothing to compact: no request waits for a summarizer that is not running.
        compaction={"compaction_interval": 1000, "overlap_size": 1},
        compaction_overrides={},
    )
    assert settings.gc_mode == "frozen"  # the default this test holds to its bound
    await create_deployment_topics(settings)
    events = settings.topic("events")
    log_path = tmp_path / "worker.log"
    worker = start_worker(settings, log_path)
    try:
        rounds: list[tuple[int, int]] = []
        rss: list[int] = []
        for index in range(ROUNDS):
            if index == JOIN_AFTER_ROUND:
                before = whole_collections(metrics_port)
                other = start_worker(
                    settings.model_copy(update={"metrics_port": other_port}),
                    tmp_path / "other.log",
                )
                try:
                    await wait_for(
                        "the revocation's whole collection",
                        functools.partial(_more_than, metrics_port, before),
                        REBALANCE_TIMEOUT_S,
                    )
                    rounds.append(await append_round(kafka_bootstrap, events, index))
                    await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
                finally:
                    stop_worker(other)
                assert other.returncode == 0
            else:
                rounds.append(await append_round(kafka_bootstrap, events, index))
                await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
            rss.append(status_bytes(worker.pid, "VmRSS"))
        # Back to one worker: every partition folded by the first again.
        committed = await committed_offsets(kafka_bootstrap, settings.app_id, events)
        assert len(committed) == PARTITIONS
    finally:
        stop_worker(worker)
    assert worker.returncode == 0

    folded_since = sum(raw for raw, _ in rounds[WARM_ROUNDS:])
    evicted = sum(estimate for _, estimate in rounds[WARM_ROUNDS:])
    fetched = settings.fetched_bytes_bound(PARTITIONS)
    allowance = COPIES * folded_since + fetched + SLACK_BYTES
    assert 2 * allowance < evicted, "what is evicted must outweigh the allowance"
    grown = rss[-1] - rss[WARM_ROUNDS - 1]
    report = (
        f"rss by round {[f'{value / 1024**2:.1f}' for value in rss]} MiB; grew "
        f"{grown / 1024**2:.1f} MiB after round {WARM_ROUNDS} while folding "
        f"{folded_since / 1024**2:.1f} MiB of records ({evicted / 1024**2:.1f} MiB decoded, "
        f"estimated); allowance {allowance / 1024**2:.1f} MiB"
    )
    print(report)  # noqa: T201 - the figures, shown with -s
    assert grown <= allowance, report

    line = logged_gc(tmp_path, "worker")
    assert line["mode"] == "frozen", line
    assert int(line["whole"]) >= 2, line  # the start's and the revocation's at least


async def _more_than(metrics_port: int, before: float) -> bool:
    return await asyncio.to_thread(whole_collections, metrics_port) > before
