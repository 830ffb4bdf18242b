"""A native projector paused inside its transaction while another takes over, then resumed.

The first worker pauses inside each open transaction (fault injection:
``fault_transaction_pause_s``, logged ``transaction open``), after its records
were sent and before its offsets and commit, and is stopped with SIGSTOP
there. A second worker of the same group takes every partition over once the
first one's session has timed out; its producers, with the same per-partition
transactional ids, fence the first worker's, and the broker aborts the open
transaction. The second folds the whole log. Resumed with SIGCONT, the first
worker's commit fails and it exits non-zero; ``read_committed`` readers see
projections equal to a clean fold and every request's first emission exactly
once, while a ``read_uncommitted`` reader shows the first worker's aborted
writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.native_engine.changelog import changelog_topic
from tests.conftest import unique_topic
from tests.support.kafka import (
    WorkerProcess,
    append_envelopes,
    assert_changelog_holds,
    changelog_offsets,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    read_topic,
    requests_on,
    scripted_sessions,
    settings_env,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

SESSIONS = 12
INVOCATIONS = 12
PAUSE_S = 20.0  # long enough to stop the worker inside its first transaction
OPEN_TIMEOUT_S = 90.0  # a worker starts, joins, restores and opens a transaction
CATCH_UP_TIMEOUT_S = 180.0  # the first worker's session times out; the second folds the log
EXIT_TIMEOUT_S = 120.0  # the resumed worker ends its pause, fails its commit and stops


async def test_a_paused_worker_is_fenced_and_its_writes_never_seen(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("zombie"),
        engine="native",
        data_dir=tmp_path / "data",
        session_timeout_s=6.0,
        compaction_request_max_attempts=1000,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    await append_envelopes(kafka_bootstrap, events, scripted_sessions(SESSIONS, INVOCATIONS))

    env = settings_env(settings)
    zombie = WorkerProcess(
        {**env, "CTXSTREAM_FAULT_TRANSACTION_PAUSE_S": str(PAUSE_S)},
        tmp_path / "zombie.log",
        command=("ctxstream", "worker"),
    )
    successor = WorkerProcess(env, tmp_path / "successor.log", command=("ctxstream", "worker"))
    await zombie.start()
    try:
        assert await zombie.wait_for("transaction open", OPEN_TIMEOUT_S), zombie.log_since_start()
        zombie.pause()
        await successor.start()
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)

        zombie.resume()
        status = await zombie.exited(EXIT_TIMEOUT_S)
        assert status not in (None, 0), zombie.log_since_start()[-3000:]
    finally:
        zombie.resume()
        await zombie.stop()
        successor_status = await successor.stop()
    assert successor_status == 0, successor.log_since_start()[-3000:]

    # The successor's view stands: nothing the zombie tried to commit became visible.
    await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)
    requests = await requests_on(kafka_bootstrap, settings.topic("compaction-requests"))
    expected_ids = sorted(r.request_id for _, decided in folded.values() for r in decided)
    assert expected_ids
    assert sorted(r.request_id for r in requests if r.attempt == 1) == expected_ids
    in_table = await changelog_offsets(kafka_bootstrap, settings)
    assert_changelog_holds(in_table, log)

    # The zombie did write inside its transaction: a read_uncommitted reader sees more.
    written = {
        changelog_topic(settings): settings.events_partitions,
        settings.topic("projections"): settings.partitions,
    }
    for topic, partitions in written.items():
        committed = await read_topic(
            kafka_bootstrap,
            topic,
            partitions=partitions,
            until=lambda records: True,
            timeout_s=30.0,
        )
        uncommitted = await read_topic(
            kafka_bootstrap,
            topic,
            partitions=partitions,
            until=lambda records: True,
            timeout_s=30.0,
            isolation_level="read_uncommitted",
        )
        assert len(uncommitted) > len(committed), topic
