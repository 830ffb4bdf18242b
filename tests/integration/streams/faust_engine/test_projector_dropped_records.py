"""Records the consumer drops without delivering them are found in the log and folded after all.

faust can drop records around a rebalance (see :mod:`streams.faust_engine.partition_positions`).
The drop is reproduced here where it happens, between faust and the batch
shell, as if faust had acked records without delivering them: two records
in the middle (the next record reveals the gap: they are read from the log)
and the partition's last record (no record reveals it: the stall timer
finds it and seeks back). The real broker answers the projector's reads and
serves its seek.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from schemas.codec import encode
from streams.faust_engine.projector import build_projector
from tests.conftest import unique_topic
from tests.support.kafka import (
    append,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    scripted_sessions,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 90.0
MIDDLE_DROPS = (3, 4)  # and the last record: each lost the first time it is delivered


async def test_records_dropped_before_the_fold_are_sought_back_and_folded(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        data_dir=tmp_path / "data",
        events_partitions=1,
        request_check_interval_s=0.5,  # the timer that finds the dropped last record
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    envelopes = scripted_sessions(3, 2)
    await append(kafka_bootstrap, events, [(e.session_key.encode(), encode(e)) for e in envelopes])

    projector = build_projector(settings)
    shell = projector.shell
    fold = shell.project
    last = len(envelopes) - 1
    dropped: list[int] = []

    async def drop(batch: Sequence[Any]) -> None:
        offsets = {event.message.offset for event in batch}
        gone = ({*MIDDLE_DROPS, last} & offsets) - set(dropped)  # each once, when first delivered
        dropped.extend(sorted(gone))
        await fold([event for event in batch if event.message.offset not in gone])

    shell.project = drop  # type: ignore[method-assign,assignment]
    await asyncio.wait_for(projector.app.start(), STARTUP_TIMEOUT_S)
    try:
        folded = clean_fold(settings, await read_log(kafka_bootstrap, events))
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
    finally:
        await projector.app.stop()

    assert dropped == [3, 4, last]  # the drops happened as scripted
    metrics = projector.metrics.exposition().decode()
    found = [
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith('ctxstream_projector_gaps_probed_total{answer="records"}')
    ]
    assert found
    assert found[0] >= 2  # the gap and the stall, each found in the log
    assert max(s.last_offset for s in expected_snapshots(folded).values()) == len(envelopes) - 1
