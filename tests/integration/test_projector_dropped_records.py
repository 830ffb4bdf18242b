"""Records the consumer drops without delivering them are found in the log and folded after all.

faust can drop records around a rebalance (see :mod:`streams.partition_positions`).
The drop is reproduced here where it happens, between faust and the batch
shell: the agent's first batch loses two records in the middle and the
partition's last record, as if faust had acked them without delivering them.
The real broker answers the projector's probes and serves its seeks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from schemas.codec import encode
from streams.projector import build_projector
from streams.topics import topic_name
from tests.conftest import unique_topic
from tests.integration.projector_support import (
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    produce,
    projector_settings,
    read_log,
    scripted_sessions,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 90.0
DROPPED_INDICES = (3, 4)  # and the batch's last record


async def test_records_dropped_before_the_fold_are_sought_back_and_folded(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        data_dir=tmp_path / "data",
        events_partitions=1,
        batch_size=10_000,
        batch_within_s=1.0,  # the whole backlog in the first batch
        request_check_interval_s=0.5,  # the timer that finds the dropped last record
    )
    await create_deployment_topics(settings)
    events = topic_name(settings, "events")
    envelopes = scripted_sessions(3, 2)
    await produce(kafka_bootstrap, events, [(e.session_key.encode(), encode(e)) for e in envelopes])

    projector = build_projector(settings)
    shell = projector.shell
    fold = shell.project
    dropped: list[int] = []

    async def drop_once(batch: Sequence[Any]) -> None:
        if not dropped and len(batch) == len(envelopes):
            last = len(batch) - 1
            kept = [e for i, e in enumerate(batch) if i not in (*DROPPED_INDICES, last)]
            dropped.extend(e.message.offset for e in batch if e not in kept)
            batch = kept
        await fold(batch)

    shell.project = drop_once  # type: ignore[method-assign,assignment]
    await asyncio.wait_for(projector.app.start(), STARTUP_TIMEOUT_S)
    try:
        folded = clean_fold(settings, await read_log(kafka_bootstrap, events))
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
    finally:
        await projector.app.stop()

    assert dropped == [3, 4, len(envelopes) - 1]  # the drop happened as scripted
    metrics = projector.metrics.exposition().decode()
    assert 'ctxstream_projector_gaps_probed_total{answer="records"}' in metrics
    assert max(s.last_offset for s in expected_snapshots(folded).values()) == len(envelopes) - 1
