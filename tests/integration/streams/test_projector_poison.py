"""The review's poison records (H1, H2, H3, H6, M5) against a projector worker process on the
broker: each is dead-lettered with its stage, the letter fits the topic, the good records
around them are folded exactly as a fold of the good records alone, the worker stays up and
live, its cache stays within its byte ceiling, and its web port serves no table data (M3)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
from aiokafka import AIOKafkaProducer

from schemas.codec import decode_dead_letter, decode_envelope, decode_envelope_sized, encode
from schemas.dead_letter import MAX_DEAD_LETTER_BYTES
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from tests.conftest import free_ports, unique_topic
from tests.support.events import envelope
from tests.support.kafka import (
    ENGINES,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_all,
    scripted_sessions,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

PARTITIONS = 2
CATCH_UP_TIMEOUT_S = 120.0
BIG_SESSION = SessionKey("tenant0/big/u9/s9")
BIG_RECORDS = 5


@dataclass(frozen=True)
class Poison:
    """One bad record: what it is, where it goes, and the stage that must refuse it."""

    name: str
    key: bytes
    value: bytes
    stage: str
    partition: int | None = None  # None: the key's own partition


def _event_record(number: int, **changes: object) -> tuple[bytes, dict[str, object]]:
    """A good envelope of scripted session `number` as a JSON value, with `changes` to its event."""
    good = scripted_sessions(number + 1, 1)[-1]
    data = orjson.loads(encode(good))
    data["event"] = {**data["event"], **changes}
    return good.session_key.encode(), data


def _nested(depth: int) -> bytes:
    """A JSON object `depth` levels deep (orjson would refuse to write it)."""
    return b'{"x":' * depth + b"{}" + b"}" * depth


def _poisons() -> list[Poison]:
    key0, inf = _event_record(0, timestamp="inf")
    key1, tokens = _event_record(1, usageMetadata={"promptTokenCount": 18_446_744_073_709_551_615})
    key2, deep_extra = _event_record(
        2,
        content={"role": "user", "parts": [{"text": "hi", "videoMetadata": "DEEP"}]},
    )
    deep_extra_raw = orjson.dumps(deep_extra).replace(b'"DEEP"', _nested(300))
    deep_tenant = (
        b'{"schema_version":2,"tenant":'
        + b"[" * 1000
        + b"]" * 1000
        + b',"session_key":"acme/app/u/s","producer_id":"p","idempotency_key":"i",'
        b'"event":{"author":"user","timestamp":1}}'
    )
    huge_name = (
        b'{"schema_version":2,"tenant":"acme","session_key":"acme/app/u/s","producer_id":"p",'
        b'"idempotency_key":"i","event":{"author":"user","timestamp":1},"'
        + b"k" * 600_000
        + b'":1}'
    )
    stray = scripted_sessions(1, 3)[-1]  # a good event of session 0, on the other partition
    stray_key = stray.session_key.encode()
    return [
        Poison("H1 deep tenant", b"acme/app/u/s", deep_tenant, "decode"),
        Poison("H2 inf timestamp", key0, orjson.dumps(inf), "decode"),
        Poison("H2 u64 token count", key1, orjson.dumps(tokens), "decode"),
        Poison("H2 300-deep extra", key2, deep_extra_raw, "decode"),
        Poison(
            "H3 misrouted",
            stray_key,
            encode(stray),
            "partition",
            partition=1 - session_partition(stray_key, PARTITIONS),
        ),
        Poison("M5 600 KB field name", b"acme/app/u/s", huge_name, "decode"),
    ]


def _big_records() -> list[tuple[bytes, bytes]]:
    """H6: records of ~0.85 MB made of 9,000 small call parts each (~17 MB decoded)."""
    parts = [
        {"functionCall": {"id": f"c{n}", "name": "lookup", "args": {"query": "x" * 40}}}
        for n in range(9_000)
    ]
    records = []
    for n in range(BIG_RECORDS):
        event = {
            "id": f"big-{n}",
            "invocationId": f"big-inv{n}",
            "author": "agent",
            "timestamp": 5_000.0 + n,
            "content": {"role": "model", "parts": parts},
        }
        records.append((BIG_SESSION.encode(), encode(envelope(BIG_SESSION, event))))
    return records


def _fitting(records: list[tuple[bytes, bytes]], *, limit: int) -> int:
    """How many of `records`, in order, fit a session of `limit` estimated bytes."""
    total = 0
    for count, (_, value) in enumerate(records):
        total += decode_envelope_sized(value)[1]
        if total > limit:
            return count
    return len(records)


async def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, int]]) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, max_request_size=2_000_000
    )
    await producer.start()
    try:
        for key, value, partition in records:
            await (await producer.send(topic, key=key, value=value, partition=partition))
    finally:
        await producer.stop()


@pytest.mark.parametrize("engine", ENGINES)
async def test_poison_records_are_dead_lettered_and_the_worker_stays_up(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    (port,) = free_ports(1)
    big = _big_records()
    one_big = decode_envelope_sized(big[0][1])[1]
    session_max_bytes = 2 * one_big + one_big // 2  # two of the big records fit
    session_cache_bytes = one_big // 2  # not even one session fits: the folded one stays
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("poison"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=PARTITIONS,
        metrics_port=port,
        session_max_bytes=session_max_bytes,
        session_cache_bytes=session_cache_bytes,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")

    def routed(key: bytes, value: bytes) -> tuple[bytes, bytes, int]:
        return key, value, session_partition(key, PARTITIONS)

    before = [routed(e.session_key.encode(), encode(e)) for e in scripted_sessions(3, 2)]
    poisons = _poisons()
    bad = [
        (
            p.key,
            p.value,
            session_partition(p.key, PARTITIONS) if p.partition is None else p.partition,
        )
        for p in poisons
    ]
    big_records = [routed(key, value) for key, value in big]
    after = [
        routed(e.session_key.encode(), encode(e))
        for e in scripted_sessions(3, 2, first_invocation=3)
    ]
    await _produce(kafka_bootstrap, events, before)
    await _produce(kafka_bootstrap, events, bad)
    await _produce(kafka_bootstrap, events, big_records)
    await _produce(kafka_bootstrap, events, after)

    worker = start_worker(settings, tmp_path / "worker.log")
    try:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_all(kafka_bootstrap, events)
        # The oracle: the good records alone, folded with the core from scratch.
        bad_records = set(bad)
        poison_at = {
            (r.partition, r.offset) for r in log if (r.key, r.value, r.partition) in bad_records
        }
        big_at = sorted((r.partition, r.offset) for r in log if r.key == BIG_SESSION.encode())
        assert len(poison_at) == len(poisons)
        good: dict[SessionKey, list[LoggedEvent]] = defaultdict(list)
        for r in log:
            if (r.partition, r.offset) in poison_at:
                continue
            logged = LoggedEvent(Offset(r.offset), decode_envelope(r.value, record_key=r.key))
            good[logged.envelope.session_key].append(logged)
        fitting = _fitting(big, limit=session_max_bytes)
        good[BIG_SESSION] = good[BIG_SESSION][:fitting]
        expected = expected_snapshots(clean_fold(settings, good))
        stray = next(p for p in poisons if p.stage == "partition")
        await wait_for_snapshots(settings, expected, CATCH_UP_TIMEOUT_S)

        letters_topic = settings.topic("dead-letters")

        async def all_letters() -> bool:
            return len(await read_all(kafka_bootstrap, letters_topic)) >= len(poisons) + 3

        await wait_for("every dead letter", all_letters, CATCH_UP_TIMEOUT_S)
        raw_letters = await read_all(kafka_bootstrap, letters_topic)
        letters = [decode_dead_letter(r.value) for r in raw_letters]
        by_source = {(x.source_partition, x.source_offset): x for x in letters}
        for poison in poisons:
            home = session_partition(poison.key, PARTITIONS)
            partition = home if poison.partition is None else poison.partition
            (at,) = [
                (r.partition, r.offset)
                for r in log
                if (r.key, r.value, r.partition) == (poison.key, poison.value, partition)
            ]
            letter = by_source[at]
            assert letter.stage == poison.stage, (poison.name, letter.reason)
            assert letter.original_size == len(poison.value), poison.name
            assert letter.truncated or letter.original_value == poison.value, poison.name
            assert "\n" not in letter.reason
            assert "\x1b" not in letter.reason
        assert stray.stage == "partition"
        assert fitting == 2
        for at in big_at[fitting:]:
            assert by_source[at].stage == "session-size", by_source[at].reason
        assert all(len(r.value) <= MAX_DEAD_LETTER_BYTES for r in raw_letters)

        assert worker.poll() is None, "the worker died"
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as web:
            health = await web.get("/healthz")
            assert (health.status_code, health.text) == (200, "ok")
            metrics = (await web.get("/metrics")).text
            for page in ("/table/sessions/", "/router/", "/graph/", "/assignment/"):
                answer = await web.get(page)
                assert answer.status_code == 404, page  # faust's own pages are off (M3)
        cache_bytes = next(
            float(line.split()[-1])
            for line in metrics.splitlines()
            if line.startswith("ctxstream_projector_cache_bytes ")
        )
        assert 0 < cache_bytes <= session_cache_bytes + session_max_bytes
        assert "ctxstream_projector_folding_alive 1.0" in metrics
    finally:
        stop_worker(worker)
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()[-3000:]
    await asyncio.sleep(0)
