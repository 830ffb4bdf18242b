"""The native engine's state restored from its changelog equals the state it was built as.

One engine (RocksDB, data folder A) folds a workload and stops; its table
entries are what it held. A fresh engine with an empty folder B restores every
partition from the changelog alone: the same entries, every one of them read
from the changelog. The first engine started again on folder A restores only
the changelog's tail: nothing to read, the same entries. Each time, the
projections stay equal to a clean fold of the log.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.kafka import (
    append_envelopes,
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
CATCH_UP_TIMEOUT_S = 120.0
RESTORE_TIMEOUT_S = 60.0


async def _restored(settings: ProjectorSettings) -> tuple[dict[int, dict[bytes, bytes]], int]:
    """Start an engine, wait until it owns every partition; its entries and entries read."""
    engine = NativeProjector(settings)
    await asyncio.wait_for(engine.start(), STARTUP_TIMEOUT_S)
    try:
        deadline = time.monotonic() + RESTORE_TIMEOUT_S
        while engine.partitions.owned() != set(range(settings.events_partitions)):
            assert time.monotonic() < deadline, f"restored only {sorted(engine.partitions.owned())}"
            await asyncio.sleep(0.05)
        entries = engine.partitions.table_entries()
        read = sum(restored.records for restored in engine.partitions.restored.values())
    finally:
        await engine.stop()
    return entries, read


async def test_state_restored_from_the_changelog_equals_the_state_before(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("restore"),
        engine="native",
        store="rocksdb",
        data_dir=tmp_path / "a",
        batch_size=200,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    await append_envelopes(kafka_bootstrap, events, scripted_sessions(12, 10))

    engine = NativeProjector(settings)
    await asyncio.wait_for(engine.start(), STARTUP_TIMEOUT_S)
    try:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        folded = clean_fold(settings, await read_log(kafka_bootstrap, events))
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
        before = engine.partitions.table_entries()
    finally:
        await engine.stop()
    assert sorted(before) == list(range(settings.events_partitions))
    headers = [key for entries in before.values() for key in entries if key.startswith(b"h:")]
    assert len(headers) == 12  # one header per session
    stored = sum(len(entries) for entries in before.values())

    fresh, read_fresh = await _restored(settings.model_copy(update={"data_dir": tmp_path / "b"}))
    assert fresh == before
    assert read_fresh >= stored  # every entry came from the changelog (some written twice)

    again, read_again = await _restored(settings)
    assert again == before
    assert read_again == 0  # the local store was current: the changelog had no tail
    await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
