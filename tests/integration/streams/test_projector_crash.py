"""``kill -9`` of the worker mid-stream and a restart end with projections equal to a clean
fold of the topic, every applied offset in the table exactly once, and every request emitted;
on the native engine, every request's first emission is committed exactly once."""

from __future__ import annotations

import signal
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
    end_offsets,
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
INVOCATIONS = 40  # 6,400 events
FIRST_COMMIT_TIMEOUT_S = 90.0  # a worker subprocess starts, joins, folds its first batches
CATCH_UP_TIMEOUT_S = 180.0
RETRY_TIMEOUT_S = 3.0  # a request lost with the crash is re-emitted this long after the restart
# No summarizer answers here, so a request is re-emitted every RETRY_TIMEOUT_S. With the default
# cap (3 emissions) the worker would refuse it on `events` about 9 s after the restart, and the
# log read once caught up would no longer be the log the snapshots end at. The refusal has a test
# of its own (test_projector_refusal.py); here the cap is out of reach.
MAX_ATTEMPTS = 1000


@pytest.mark.parametrize("store", ["rocksdb", "memory"])
@pytest.mark.parametrize("engine", ENGINES)
async def test_kill_and_restart_equal_a_clean_fold(
    kafka_bootstrap: str, tmp_path: Path, store: str, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        engine=engine,
        store=store,
        data_dir=tmp_path / "data",
        batch_size=100,
        compaction_request_timeout_s=RETRY_TIMEOUT_S,
        compaction_request_max_attempts=MAX_ATTEMPTS,
        request_check_interval_s=0.5,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    await append_envelopes(kafka_bootstrap, events, scripted_sessions(SESSIONS, INVOCATIONS))
    ends = await end_offsets(kafka_bootstrap, events)
    total = sum(ends.values())

    worker = start_worker(settings, tmp_path / "worker-1.log")
    try:

        async def partly_committed() -> bool:
            committed = await committed_offsets(kafka_bootstrap, settings.app_id, events)
            return sum(committed.values()) > 0

        await wait_for("a first commit", partly_committed, FIRST_COMMIT_TIMEOUT_S)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        stop_worker(worker)
    committed = await committed_offsets(kafka_bootstrap, settings.app_id, events)
    assert sum(committed.values()) < total, "the worker finished before it was killed"

    worker = start_worker(settings, tmp_path / "worker-2.log")
    try:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)

        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
        expected_ids = {r.request_id for _, requests in folded.values() for r in requests}
        requests_topic = settings.topic("compaction-requests")

        async def every_request_emitted() -> bool:
            emitted = {r.request_id for r in await requests_on(kafka_bootstrap, requests_topic)}
            return emitted == expected_ids

        await wait_for("every decided request on the topic", every_request_emitted, 30.0)
        assert expected_ids
        if engine == "native":  # requests of aborted transactions are never read
            first = [
                r.request_id
                for r in await requests_on(kafka_bootstrap, requests_topic)
                if r.attempt == 1
            ]
            assert sorted(first) == sorted(expected_ids)
    finally:
        stop_worker(worker)
    assert worker.returncode == 0
    in_table = await changelog_offsets(kafka_bootstrap, settings)
    assert_changelog_holds(in_table, log)
