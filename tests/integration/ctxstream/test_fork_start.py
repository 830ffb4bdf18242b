"""A fork reads its source from the source's first offset even when another worker owns it.

Two native worker processes of one group share the `events` partitions. The
source session sits behind many records of another session on a partition
the first worker owns; the fork lands on a partition the second owns, which
knows nothing of the source. ``Client.fork`` asks the source's owner where
the source's history starts (``history-start``) and writes it into the fork
record, so the second worker reads the source's partition from there, not
from offset 0: its log says ``history read: 3 records of offsets [first,
end)``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from ctxstream import SyncClient
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings
from streams.reads.owners import PartitionOwners
from tests.conftest import free_ports, unique_topic
from tests.support import kafka
from tests.support.events import text_event
from tests.support.read_worker import VIEW_AGENT

pytestmark = pytest.mark.integration

CLAIMED_TIMEOUT_S: Final = 180.0  # two cold workers: group join, a rebalance, restores, claims
FOLDED_TIMEOUT_S: Final = 120.0
#: Records of another session on the source's partition, ahead of the source's first.
FILLER_RECORDS: Final = 500


@pytest.fixture
def two_workers(
    kafka_bootstrap: str, tmp_path: Path
) -> Iterator[tuple[ProjectorSettings, dict[str, Path]]]:
    """A deployment served by two worker processes of one group; their logs by address."""
    base = kafka.projector_settings(
        kafka_bootstrap,
        unique_topic("fork-start"),
        view_agent_names={"acme/support": VIEW_AGENT},
    )
    asyncio.run(kafka.create_deployment_topics(base))
    logs: dict[str, Path] = {}
    workers = []
    try:
        for number, port in enumerate(free_ports(2), start=1):
            logs[f"127.0.0.1:{port}"] = tmp_path / f"worker-{number}.log"
            settings = base.model_copy(
                update={"query_port": port, "data_dir": tmp_path / f"w{number}"}
            )
            workers.append(kafka.start_worker(settings, logs[f"127.0.0.1:{port}"]))
        asyncio.run(
            kafka.wait_for(
                "both workers' claims", lambda: _shared(base, set(logs)), CLAIMED_TIMEOUT_S
            )
        )
        yield base, logs
    finally:
        for worker in workers:
            kafka.stop_worker(worker)


async def _owners(settings: ProjectorSettings) -> dict[int, str]:
    """Each claimed `events` partition's owner address, as the newest claims say."""
    owners = PartitionOwners(settings)
    try:
        await owners.refresh()
        return {
            partition: claim.address
            for partition in range(settings.events_partitions)
            if (claim := owners.owner(partition)) is not None
        }
    finally:
        await owners.close()


async def _shared(settings: ProjectorSettings, addresses: set[str]) -> bool:
    owners = await _owners(settings)
    return len(owners) == settings.events_partitions and set(owners.values()) == addresses


def _key_on(partitions: int, partition: int) -> SessionKey:
    while True:
        key = SessionKey(f"acme/support/{unique_topic('u')}/s")
        if session_partition(key.encode(), partitions) == partition:
            return key


def test_a_fork_reads_a_source_another_worker_owns_from_the_sources_first_offset(
    two_workers: tuple[ProjectorSettings, dict[str, Path]],
) -> None:
    deployment, logs = two_workers
    partitions = deployment.events_partitions
    owners = asyncio.run(_owners(deployment))
    source_partition = min(owners)
    fork_partition = next(p for p in sorted(owners) if owners[p] != owners[source_partition])
    filler, source = _key_on(partitions, source_partition), _key_on(partitions, source_partition)
    fork = _key_on(partitions, fork_partition)
    with SyncClient(settings=deployment) as client:
        client.append_many(
            filler, [text_event(f"f{i}", f"f{i // 50}", 10 + i) for i in range(FILLER_RECORDS)]
        )
        offsets = client.append_many(
            source, [text_event(f"s{i}", "i1", 1_000 + i, f"s{i}") for i in range(3)]
        )
        assert offsets[0] >= FILLER_RECORDS  # the filler lies below the source's first record
        forked = client.fork(source, offsets[-1], fork, timeout_s=FOLDED_TIMEOUT_S)
        contents = client.context(fork, min_offset=forked, timeout_s=FOLDED_TIMEOUT_S)
    assert [c.parts[0].text for c in contents if c.parts] == ["s0", "s1", "s2"]
    # The fork's worker does not own the source's partition: only the fork record said where
    # the source starts.
    assert asyncio.run(_owners(deployment)) == owners
    log = logs[owners[fork_partition]].read_text(encoding="utf-8")
    reads = re.findall(
        rf"session={re.escape(source)} history read: (\d+) records of offsets \[(\d+), (\d+)\)",
        log,
    )
    assert [tuple(map(int, read)) for read in reads] == [(3, offsets[0], offsets[-1] + 1)]
