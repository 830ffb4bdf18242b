"""Two workers with one app id share the partitions; a worker joining and another leaving
mid-stream lose and duplicate nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    assert_changelog_holds,
    changelog_offsets,
    clean_fold,
    committed_offsets,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    requests_on,
    scripted_sessions,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

SESSIONS = 40
INVOCATIONS = 30  # per phase; 4,800 events each
FIRST_COMMIT_TIMEOUT_S = 90.0
CATCH_UP_TIMEOUT_S = 180.0


@pytest.mark.parametrize("engine", ENGINES)
async def test_two_workers_and_rebalances_lose_and_duplicate_nothing(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap, unique_topic("proj"), batch_size=100, engine=engine
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    first = start_worker(
        settings.model_copy(update={"data_dir": tmp_path / "w1"}), tmp_path / "worker-1.log"
    )
    second = None
    try:
        await append_envelopes(kafka_bootstrap, events, scripted_sessions(SESSIONS, INVOCATIONS))

        async def some_committed() -> bool:
            committed = await committed_offsets(kafka_bootstrap, settings.app_id, events)
            return sum(committed.values()) > 0

        await wait_for("the first worker's first commit", some_committed, FIRST_COMMIT_TIMEOUT_S)
        second = start_worker(
            settings.model_copy(update={"data_dir": tmp_path / "w2"}), tmp_path / "worker-2.log"
        )
        await append_envelopes(
            kafka_bootstrap,
            events,
            scripted_sessions(SESSIONS, INVOCATIONS, first_invocation=INVOCATIONS + 1),
        )
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        stop_worker(first)  # the second takes every partition over
        assert first.returncode == 0
        await append_envelopes(
            kafka_bootstrap,
            events,
            scripted_sessions(SESSIONS, 5, first_invocation=2 * INVOCATIONS + 1),
        )
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)

        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
    finally:
        stop_worker(first)
        if second is not None:
            stop_worker(second)
    assert second is not None
    assert second.returncode == 0

    in_table = await changelog_offsets(kafka_bootstrap, settings)
    assert_changelog_holds(in_table, log)
    emitted = await requests_on(kafka_bootstrap, settings.topic("compaction-requests"))
    counts = Counter(request.request_id for request in emitted)
    expected_ids = {r.request_id for _, requests in folded.values() for r in requests}
    assert set(counts) == expected_ids
    assert expected_ids
    assert max(counts.values()) == 1
