"""``ctxstream bench ingest --workers 1 2``: every event folded once, partitions split.

The benchmark runs small with its topics kept; the test then reads what the
worker processes left on the broker, independently of the benchmark's own
counting: the `events` topic, the group's committed offsets, the workers'
`sessions` changelog (their committed table: each session's header names
the last record folded into it) and the claims on `partition-owners` (which
process restored which partition).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import ConsumerRecord
from aiokafka.admin import AIOKafkaAdminClient

from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.bench.ingest_group import group_offsets
from schemas.kafka.admin import delete_topics_of
from schemas.kafka.committed_range import CommittedRangeReader
from schemas.kafka.settings import KafkaSettings
from streams.reads.claim import PartitionClaim, decode_claim
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

EVENTS = 3_000
SESSIONS = 30
PARTITIONS = 12  # the deployment's default `events` partitions
ARGS = f"ingest --events {EVENTS} --sessions {SESSIONS} --workers 1 2 --keep-topics".split()


async def _records(
    bootstrap: str, topic: str, partitions: int
) -> list[list[ConsumerRecord[Any, Any]]]:
    """Every committed record of `topic`, per partition, in offset order."""
    reader = CommittedRangeReader(bootstrap=bootstrap, topic=topic, fetch_bytes=4 << 20)
    await reader.start()
    try:
        found: list[list[ConsumerRecord[Any, Any]]] = []
        for partition in range(partitions):
            found.append([])
            await reader.read_to_stable(partition, 0, found[-1].append)
        return found
    finally:
        await reader.stop()


async def _check_folded_once(bootstrap: str, prefix: str) -> None:
    """The group folded the whole workload, each record once, and nothing else."""
    events = await _records(bootstrap, f"{prefix}.events", PARTITIONS)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await group_offsets(admin, f"{prefix}-projector")
    finally:
        await admin.close()
    committed = {tp.partition: offset for tp, offset in offsets.items()}
    # Every record of the workload is in the topic once, below the group's committed offset.
    workload = Counter(AgentsWorkload(EVENTS, SESSIONS).records())
    in_topic = Counter((record.key, record.value) for records in events for record in records)
    assert all(in_topic[pair] == count for pair, count in workload.items())
    for partition, records in enumerate(events):
        last_workload = max((r.offset for r in records if (r.key, r.value) in workload), default=-1)
        assert committed.get(partition, 0) > last_workload
    # Each session's headers in the changelog: first and last offsets of what was folded.
    changelog = await _records(bootstrap, f"{prefix}-projector-sessions-changelog", PARTITIONS)
    for partition in range(PARTITIONS):
        folded = [r for r in events[partition] if r.offset < committed.get(partition, 0)]
        expected: dict[bytes, tuple[int, int]] = {}
        for record in folded:
            first = expected.get(record.key, (record.offset, record.offset))[0]
            expected[record.key] = (first, record.offset)
        headers: dict[bytes, list[tuple[int, int]]] = {}
        for record in changelog[partition]:
            if record.key.startswith(b"h:") and record.value is not None:
                header = orjson.loads(record.value)
                headers.setdefault(record.key[2:], []).append(
                    (header["first_offset"], header["last_offset"])
                )
        assert {key: written[-1] for key, written in headers.items()} == expected
        for written in headers.values():
            # A batch folded twice would write a header that does not move forward.
            lasts = [last for _, last in written]
            assert lasts == sorted(set(lasts))


async def _claimants(bootstrap: str, prefix: str) -> dict[int, int]:
    """Each partition's newest claimant, as a process id (worker ids: host-pid-random)."""
    (claims,) = await _records(bootstrap, f"{prefix}.partition-owners", 1)
    owners: dict[int, int] = {}
    for record in claims:
        claim = decode_claim(record.value)
        assert isinstance(claim, PartitionClaim)
        owners[claim.partition] = int(claim.worker_id.rsplit("-", 2)[1])
    return owners


async def test_two_workers_split_the_partitions_and_fold_every_event_once(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(kafka_bootstrap, tmp_path, *ARGS)
    try:
        # The existing figures are still there.
        assert figures["raw_events_per_s"] > 0
        assert sorted(figures["engines"]) == ["faust", "native"]
        assert sorted(figures["workers"]) == ["1", "2"]
        printed = dict(line.split() for line in stdout.splitlines() if line.strip())
        for n, run in figures["workers"].items():
            workers = int(n)
            seconds = run["seconds"]
            low, high = EVENTS / (seconds + 0.0005), EVENTS / max(seconds - 0.0005, 1e-9)
            assert low - 0.05 <= run["events_per_s"] <= high + 0.05
            assert run["per_process_events_per_s"] == pytest.approx(
                run["events_per_s"] / workers, abs=0.1
            )
            assert run["ratio"] == pytest.approx(
                run["events_per_s"] / figures["raw_events_per_s"], abs=1e-3
            )
            assert float(printed[f"workers_{n}_events_per_s"]) == run["events_per_s"]
            processes = run["processes"]
            assert len({p["pid"] for p in processes}) == workers
            # The partitions split between the processes, as their claims say.
            owned = [set(p["partitions"]) for p in processes]
            assert all(owned)
            assert set().union(*owned) == set(range(PARTITIONS))
            assert sum(len(partitions) for partitions in owned) == PARTITIONS
            assert sum(p["events"] for p in processes) == EVENTS
            claimants = await _claimants(kafka_bootstrap, run["topic_prefix"])
            assert claimants == {
                partition: p["pid"] for p in processes for partition in p["partitions"]
            }
            await _check_folded_once(kafka_bootstrap, run["topic_prefix"])
    finally:
        await delete_topics_of(
            KafkaSettings(kafka_bootstrap=kafka_bootstrap, topic_prefix=figures["topic_prefix"])
        )
