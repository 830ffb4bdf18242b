"""End to end on the real broker: projector and summarizer running, the summarizer killed 20 times.

50 sessions of 30 invocations with tool calls are appended one round (one
invocation of every session) at a time. The projector (``ctxstream worker``)
decides compaction requests, the summarizer (``ctxstream summarizer``)
appends their summary events, the projector masks the summarized ranges. The
summarizer is killed with SIGKILL at 20 random points (after the window is
built, before the summarizer's result is used, inside the open transaction)
and restarted each time. At the end:

* every request the projector emitted has exactly one committed summary,
  spanning exactly the request's range: no duplicate, none missing;
* the projector emitted exactly the requests the pure core decides on the
  committed log;
* each session's published snapshot (its assembled context's fingerprint,
  boundary, counters) equals the core's fold of that log, and the context
  fingerprint equals an independent rebuild from the raw records.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from aiokafka.structs import ConsumerRecord

from projections.contents.snapshot import context_fingerprint
from projections.fold.rebuild import rebuild_contents
from schemas.codec import decode_compaction_request, decode_envelope
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from summarizer_worker.settings import PAUSE_POINTS
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    WorkerProcess,
    append_envelopes,
    clean_fold,
    committed_offsets,
    create_deployment_topics,
    expected_snapshots,
    latest_snapshots,
    projector_settings,
    read_topic,
    scripted_sessions,
    start_worker,
    stop_worker,
    summaries_by_request,
    worker_env,
)
from tests.support.next_agent_oracle import expected_view_request

pytestmark = pytest.mark.integration

SESSIONS = 50
INVOCATIONS = 30
EVENTS_PARTITIONS = 4
PARTITIONS = 2
ROUND_PAUSE_S = 0.6  # between rounds: the pipeline compacts while traffic goes on
KILLS = 20
STAGE_DELAY_S = 0.05
STAGE_TIMEOUT_S = 60.0
SETTLE_TIMEOUT_S = 240.0  # the backlog of the kills, summaries deciding further requests
POLL_S = 0.5
SEED = 5_020_260


def _by_session(records: list[ConsumerRecord]) -> dict[SessionKey, list[LoggedEvent]]:
    log: dict[SessionKey, list[LoggedEvent]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        envelope = decode_envelope(record.value, record_key=record.key)
        log[envelope.session_key].append(LoggedEvent(Offset(record.offset), envelope))
    return dict(log)


async def _all(bootstrap: str, topic: str, partitions: int) -> list[ConsumerRecord]:
    return await read_topic(
        bootstrap, topic, partitions=partitions, until=lambda _: True, timeout_s=60.0
    )


def _rounds(workload: list[Envelope]) -> list[list[Envelope]]:
    """The workload cut into rounds: one invocation of every session each."""
    size = len(workload) // INVOCATIONS
    return [workload[start : start + size] for start in range(0, len(workload), size)]


async def _produce(bootstrap: str, topic: str, rounds: list[list[Envelope]]) -> None:
    for envelopes in rounds:
        await append_envelopes(bootstrap, topic, envelopes)
        await asyncio.sleep(ROUND_PAUSE_S)


async def _kill_loop(worker: WorkerProcess, rng: random.Random) -> Counter[str]:
    killed_at: Counter[str] = Counter()
    for _ in range(KILLS):
        stage = rng.choice(PAUSE_POINTS)
        hits = rng.randint(1, 3)
        reached = await worker.wait_for(f"stage reached stage={stage}", STAGE_TIMEOUT_S, count=hits)
        assert reached, f"stage {stage} not reached:\n{worker.log_since_start()[-3000:]}"
        await worker.kill()
        killed_at[stage] += 1
        await worker.start()
    return killed_at


@pytest.mark.parametrize("engine", ENGINES)
async def test_pipeline_compacts_every_session_exactly_once_through_20_kills(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    rng = random.Random(SEED)  # noqa: S311 - picks kill points, not secrets
    prefix = unique_topic("e2e")
    settings = projector_settings(
        kafka_bootstrap,
        prefix,
        data_dir=tmp_path / "projector",
        events_partitions=EVENTS_PARTITIONS,
        partitions=PARTITIONS,
        batch_within_s=0.05,
        engine=engine,
    )
    await create_deployment_topics(settings)
    names = {role: f"{prefix}.{role}" for role in ("events", "compaction-requests", "projections")}
    group = unique_topic("summarizer")
    env = worker_env(
        kafka_bootstrap, prefix, group, CTXSTREAM_SUMMARIZER_INSTANCE_ID="e2e-summarizer"
    )
    delays = json.dumps(dict.fromkeys(PAUSE_POINTS, STAGE_DELAY_S))
    summarizer = WorkerProcess(
        {**env, "CTXSTREAM_SUMMARIZER_STAGE_DELAY_S": delays}, tmp_path / "summarizer.log"
    )
    projector = start_worker(settings, tmp_path / "projector.log")
    await summarizer.start()
    finisher = WorkerProcess(env, tmp_path / "finisher.log")
    try:
        # The first half of the traffic meets the kills, the second a healthy summarizer.
        kills = asyncio.create_task(_kill_loop(summarizer, rng))
        rounds = _rounds(scripted_sessions(SESSIONS, INVOCATIONS))
        await _produce(kafka_bootstrap, names["events"], rounds[: INVOCATIONS // 2])
        killed_at = await kills
        await summarizer.stop()
        await finisher.start()
        await _produce(kafka_bootstrap, names["events"], rounds[INVOCATIONS // 2 :])
        records, requests = await _settled(kafka_bootstrap, settings.app_id, group, names)
    finally:
        stop_worker(projector)
        await finisher.stop()
        await summarizer.stop()
    assert set(killed_at) == set(PAUSE_POINTS)

    emitted: dict[str, CompactionRequest] = {r.request_id: r for r in requests}
    log = _by_session(records)
    summaries = summaries_by_request(records)
    assert summaries.keys() == emitted.keys()  # none missing, none unasked for
    assert {rid: len(found) for rid, found in summaries.items() if len(found) != 1} == {}
    for request_id, (summary,) in summaries.items():
        compaction = summary.envelope.event.actions.compaction
        assert compaction is not None
        request = emitted[request_id]
        assert (compaction.start_timestamp, compaction.end_timestamp) == (
            request.start_timestamp,
            request.end_timestamp,
        )
        assert summary.envelope.session_key == request.session_key

    folded = clean_fold(settings, log)
    decided = {r.request_id for _, session_requests in folded.values() for r in session_requests}
    assert decided == emitted.keys()
    assert len({r.session_key for r in emitted.values()}) == SESSIONS
    snapshots = await latest_snapshots(kafka_bootstrap, names["projections"])
    assert snapshots == expected_snapshots(folded)
    for key, records in log.items():
        view = expected_view_request(records, settings.view_request_for(key))
        rebuilt = rebuild_contents(records, view)
        assert snapshots[key].context_fingerprint == context_fingerprint(rebuilt)
        assert snapshots[key].in_flight_request_id is None


async def _settled(
    bootstrap: str, projector_group: str, summarizer_group: str, names: dict[str, str]
) -> tuple[list[ConsumerRecord], list[CompactionRequest]]:
    """Wait until every request is answered and both workers have consumed everything.

    The groups' offsets are read first: once they cover the topics as read
    after them, the projector has folded every event (and sent the requests
    they decided, which it flushes before committing) and the summarizer has
    taken every request, so nothing more will come.

    Returns:
        The committed `events` records and every request emitted.
    """
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        projector_done = await committed_offsets(bootstrap, projector_group)
        summarizer_done = await committed_offsets(bootstrap, summarizer_group)
        events = await _all(bootstrap, names["events"], EVENTS_PARTITIONS)
        request_records = await _all(bootstrap, names["compaction-requests"], PARTITIONS)
        requests = [decode_compaction_request(r.value) for r in request_records]
        if (
            {r.request_id for r in requests} <= summaries_by_request(events).keys()
            and _covered(projector_done, events)
            and _covered(summarizer_done, request_records)
        ):
            return events, requests
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"the pipeline did not settle in {SETTLE_TIMEOUT_S}s")


def _covered(committed: dict[int, int], records: list[ConsumerRecord]) -> bool:
    """Whether `committed` (partition -> offset) is past every record of `records`."""
    return all(committed.get(r.partition, -1) > r.offset for r in records)
