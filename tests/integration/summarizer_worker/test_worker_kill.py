"""``kill -9`` of the summarizer at 20 random points: no duplicate and no missing summary.

The worker pauses briefly at three named stages (fault injection,
``CTXSTREAM_SUMMARIZER_STAGE_DELAY_S``) and logs each before it pauses; the
test waits for a randomly chosen stage to be reached a random number of times
and kills the worker there: after the window is built (``render``), before the
summarizer's result is used (``summarize``) or inside the open transaction,
with the summary already sent (``transaction``). It then restarts it, which
fences the killed producer and aborts its transaction. After 20 kills a last
run finishes the work; every request must then have exactly one committed
summary, while the uncommitted log shows the aborted ones.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from summarizer_worker.settings import PAUSE_POINTS
from tests.conftest import unique_topic
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    WorkerProcess,
    answered,
    append_envelopes,
    append_requests,
    create_topics_for,
    invocation_events,
    planned_requests,
    read_topic,
    summaries_by_request,
    topics,
    wait_committed,
    worker_env,
)

pytestmark = pytest.mark.integration

KILLS = 20
SESSIONS = 30
INVOCATIONS = 7  # two requests per session
EVENTS_PARTITIONS = 4
REQUEST_PARTITIONS = 3
STAGE_DELAY_S = 0.05  # long enough that a kill sent on the log line lands inside the stage
STAGE_TIMEOUT_S = 60.0  # a restart: interpreter, group join, producers fencing their predecessors
WORK_TIMEOUT_S = 120.0
SEED = 20_261_130


async def test_kill_9_at_random_stages_leaves_one_summary_per_request(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED)  # noqa: S311 - picks kill points, not secrets
    prefix, group = unique_topic("sk"), unique_topic("summarizer")
    await create_topics_for(
        kafka_bootstrap, prefix, events_partitions=EVENTS_PARTITIONS, partitions=REQUEST_PARTITIONS
    )
    names = topics(prefix)
    envelopes = [
        envelope(session_key(s), event)
        for n in range(INVOCATIONS)
        for s in range(SESSIONS)
        for event in invocation_events(s, n)
    ]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    requests = [
        request
        for s in range(SESSIONS)
        for request in planned_requests(
            session_key(s), [r for r in logged if r.envelope.session_key == session_key(s)]
        )
    ]
    duplicates = rng.sample(requests, len(requests) // 3)
    placed = await append_requests(
        kafka_bootstrap, names["compaction-requests"], [*requests, *duplicates]
    )
    ends = dict.fromkeys(range(REQUEST_PARTITIONS), 0)
    for partition, offset in placed:
        ends[partition] = max(ends[partition], offset + 1)

    delays = json.dumps(dict.fromkeys(PAUSE_POINTS, STAGE_DELAY_S))
    env = worker_env(
        kafka_bootstrap,
        prefix,
        group,
        CTXSTREAM_SUMMARIZER_INSTANCE_ID="kill-test",
        CTXSTREAM_SUMMARIZER_CONCURRENCY="4",
    )
    worker = WorkerProcess(
        {**env, "CTXSTREAM_SUMMARIZER_STAGE_DELAY_S": delays}, tmp_path / "w.log"
    )
    killed_at: Counter[str] = Counter()
    for _ in range(KILLS):
        stage = rng.choice(PAUSE_POINTS)
        hits = rng.randint(1, 3)
        await worker.start()
        reached = await worker.wait_for(f"stage reached stage={stage}", STAGE_TIMEOUT_S, count=hits)
        assert reached, (
            f"stage {stage} not reached {hits} times:\n{worker.log_since_start()[-3000:]}"
        )
        await worker.kill()
        killed_at[stage] += 1
    assert set(killed_at) == set(PAUSE_POINTS)

    finisher = WorkerProcess(env, tmp_path / "finisher.log")
    await finisher.start()
    try:
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, finisher.log_since_start()[-3000:]
        records = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=EVENTS_PARTITIONS,
            until=answered(r.request_id for r in requests),
            timeout_s=WORK_TIMEOUT_S,
        )
    finally:
        assert await finisher.stop() == 0

    summaries = summaries_by_request(records)
    assert sorted(summaries) == sorted(r.request_id for r in requests)  # none missing
    duplicated = {request_id: len(s) for request_id, s in summaries.items() if len(s) != 1}
    assert duplicated == {}
    # The kills inside transactions did leave summaries in the log: aborted, never read.
    uncommitted = await read_topic(
        kafka_bootstrap,
        names["events"],
        partitions=EVENTS_PARTITIONS,
        until=lambda _: True,
        timeout_s=WORK_TIMEOUT_S,
        isolation_level="read_uncommitted",
    )
    assert sum(map(len, summaries_by_request(uncommitted).values())) > len(requests)


async def test_a_second_worker_and_a_killed_first_leave_one_summary_per_request(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    # Partitions move between workers twice: when the second joins, and when the first,
    # killed inside a transaction, leaves the group at its session timeout. The new owner
    # of each partition fences the old one through the partition's transactional id.
    prefix, group = unique_topic("sr"), unique_topic("summarizer")
    await create_topics_for(
        kafka_bootstrap, prefix, events_partitions=EVENTS_PARTITIONS, partitions=REQUEST_PARTITIONS
    )
    names = topics(prefix)
    envelopes = [
        envelope(session_key(s), event)
        for n in range(INVOCATIONS)
        for s in range(SESSIONS)
        for event in invocation_events(s, n)
    ]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    requests = [
        request
        for s in range(SESSIONS)
        for request in planned_requests(
            session_key(s), [r for r in logged if r.envelope.session_key == session_key(s)]
        )
    ]
    placed = await append_requests(kafka_bootstrap, names["compaction-requests"], requests * 2)
    ends = dict.fromkeys(range(REQUEST_PARTITIONS), 0)
    for partition, offset in placed:
        ends[partition] = max(ends[partition], offset + 1)
    delays = json.dumps(dict.fromkeys(PAUSE_POINTS, STAGE_DELAY_S))
    env = {
        **worker_env(kafka_bootstrap, prefix, group, CTXSTREAM_SUMMARIZER_CONCURRENCY="2"),
        "CTXSTREAM_SUMMARIZER_STAGE_DELAY_S": delays,
    }
    first = WorkerProcess(env, tmp_path / "first.log")
    second = WorkerProcess(env, tmp_path / "second.log")
    await first.start()
    try:
        assert await first.wait_for("stage reached stage=transaction", STAGE_TIMEOUT_S)
        await second.start()
        assert await second.wait_for("partitions assigned partitions=", STAGE_TIMEOUT_S)
        assert await first.wait_for("stage reached stage=transaction", STAGE_TIMEOUT_S, count=3)
        await first.kill()
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, second.log_since_start()[-3000:]
        records = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=EVENTS_PARTITIONS,
            until=answered(r.request_id for r in requests),
            timeout_s=WORK_TIMEOUT_S,
        )
    finally:
        assert await second.stop() == 0
    summaries = summaries_by_request(records)
    assert sorted(summaries) == sorted(r.request_id for r in requests)
    assert {rid: len(found) for rid, found in summaries.items() if len(found) != 1} == {}
    # The second worker ended up owning every partition, the killed one's included.
    opened = re.findall(r"lane opened topic=\S+ partition=(\d+)", second.log_since_start())
    assert set(opened) == {str(p) for p in range(REQUEST_PARTITIONS)}
