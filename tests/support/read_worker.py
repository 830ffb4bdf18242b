"""A native worker process that serves a deployment's reads, for the tests of the read routes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from streams.projector_settings import ProjectorSettings
from streams.reads.owners import PartitionOwners
from tests.conftest import unique_topic
from tests.support.kafka import (
    create_deployment_topics,
    projector_settings,
    start_worker,
    stop_worker,
    wait_for,
)

#: The agent whose context the read tests' snapshots describe (a read without `agent`).
VIEW_AGENT: Final = "root"
CLAIMED_TIMEOUT_S: Final = 120.0  # a cold worker: group join, restore, one claim per partition
#: The worker's log, in the deployment's data folder.
WORKER_LOG: Final = "worker.log"


async def claims(reads: ProjectorSettings) -> PartitionOwners:
    """The deployment's claims, read to the end once every `events` partition has one."""
    owners = PartitionOwners(reads)

    async def all_claimed() -> bool:
        await owners.refresh()
        return all(owners.owner(p) is not None for p in range(reads.events_partitions))

    try:
        await wait_for("a claim of every events partition", all_claimed, CLAIMED_TIMEOUT_S)
    finally:
        await owners.close()
    return owners


@contextlib.contextmanager
def serving_worker(
    bootstrap: str, folder: Path, prefix: str, **overrides: Any
) -> Iterator[ProjectorSettings]:
    """A fresh deployment (`prefix` made unique) served by ``python -m ctxstream worker``.

    Yields its settings once the worker has claimed every partition; the
    worker logs to :data:`WORKER_LOG` in `folder` (its data folder) and is
    stopped when the block ends.
    """
    reads = projector_settings(bootstrap, unique_topic(prefix), data_dir=folder, **overrides)
    asyncio.run(create_deployment_topics(reads))
    worker = start_worker(reads, folder / WORKER_LOG)
    try:
        asyncio.run(claims(reads))
        yield reads
    finally:
        stop_worker(worker)
