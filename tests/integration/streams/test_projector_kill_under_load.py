"""``kill -9`` of the projector at random points while sessions keep arriving, on both engines.

A producer appends a load of sessions to `events`, one round (every session's next
invocation) at a time, while the projector worker, a subprocess, is killed with SIGKILL
:data:`KILLS` times and restarted after each kill. The kill points are seeded random
delays: the first soon after the worker logged its start (while it joins, restores or folds
its first batch), the others mid-batch (within a few milliseconds of the restarted worker's
first request emission, logged as the request is sent: its batch, folding the backlog that
built up while no worker ran, is under way). The test plays the summarizer, answering the
requests emitted so far before each round, so the sessions keep deciding while the load
runs. After the load ends and the last worker has caught up:

* every kill hit a running worker (alive when the signal was sent, ended by SIGKILL), and
  at least one landed while the load was still being appended: the test cannot pass
  without its kills;
* the latest snapshots on `projections` equal a clean fold of the log;
* exactly one request per decision: every request the clean fold decides is on
  `compaction-requests` (read ``read_committed``), no other request is, and every emission
  equals the decided request except for its attempt. On the native engine each
  request's first emission (attempt 1) is there exactly once: it is sent in the
  transaction of the batch that decided it, so a killed batch's emissions abort with it
  and the batch's redo emits them once. Faust is at least once on emission (its producer
  is not transactional): a request decided by records folded again after a kill may be
  emitted twice, and one lost with the kill is emitted again by the retry timer (attempt
  2 onwards). So on faust a request id may appear more than once, always with the same
  content, and none is missing;
* the table's changelog holds every applied offset exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from schemas.compaction_request import CompactionRequest
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import answer_envelope
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    assert_changelog_holds,
    changelog_offsets,
    clean_fold,
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
logger = logging.getLogger(__name__)

SEED = 12
SESSIONS = 24
ROUNDS = 30  # invocations per session: 24 x 30 x 4 = 2,880 events
ROUND_PAUSE_S = 0.5  # the load lasts about 30 s, longer than the kills take
START_CLOCK = 1_000.0
KILLS = ("soon after start", "mid-batch", "mid-batch", "mid-batch")
SOON_AFTER_START_S = (0.0, 1.5)  # from the worker's first log line: joining, restoring, folding
MID_BATCH_S = (0.0, 0.05)  # from the worker's first request emission, its batch under way
STARTING = "projector starting"  # the worker's first log line (both engines)
EMITTING = "compaction request session="  # logged as each request is sent (both engines)
LOG_TIMEOUT_S = 60.0  # a killed worker's session times out; the next restores and folds
LOG_POLL_S = 0.005
CATCH_UP_TIMEOUT_S = 120.0
EMITTED_TIMEOUT_S = 30.0
RETRY_TIMEOUT_S = 3.0  # a request lost with a kill is re-emitted this long after the restart
# A request the test has not answered yet (those of the last rounds stay unanswered) is
# re-emitted every RETRY_TIMEOUT_S. With the default cap (3 emissions) the worker would refuse
# requests on `events` once the load is over, and the log read once caught up would not be
# the log the snapshots end at (see test_projector_crash.py); here the cap is out of reach.
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class Kill:
    """One SIGKILL: what it aimed at, whether the worker was alive, how it ended."""

    aim: str
    delay_s: float
    alive: bool
    status: int
    during_load: bool


async def append_load(settings: ProjectorSettings) -> None:
    """Every session's invocations, one round at a time, a pause between rounds.

    The test plays the summarizer: each round first answers every request emitted since
    the last one, so the sessions keep deciding while the load runs.
    """
    bootstrap = settings.kafka_bootstrap
    events, requests = settings.topic("events"), settings.topic("compaction-requests")
    answered: set[str] = set()
    for invocation in range(1, ROUNDS + 1):
        emitted = {r.request_id: r for r in await requests_on(bootstrap, requests)}
        fresh = [r for request_id, r in emitted.items() if request_id not in answered]
        clock = START_CLOCK + invocation * 10 - 5  # after the previous round's invocations
        answers = [answer_envelope(r, len(answered) + n, clock) for n, r in enumerate(fresh)]
        answered.update(r.request_id for r in fresh)
        round_ = scripted_sessions(
            SESSIONS, 1, first_invocation=invocation, start_clock=START_CLOCK
        )
        await append_envelopes(bootstrap, events, [*answers, *round_])
        await asyncio.sleep(ROUND_PAUSE_S)


def log_holds(log_path: Path, text: str) -> bool:
    """Whether the worker's log holds `text` yet."""
    return text in log_path.read_text(errors="replace")


async def wait_for_line(log_path: Path, text: str) -> None:
    """Wait until the worker's log holds `text`."""
    deadline = time.monotonic() + LOG_TIMEOUT_S
    while not log_holds(log_path, text):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {LOG_TIMEOUT_S}s waiting for {text!r}")
        await asyncio.sleep(LOG_POLL_S)


def kill(
    worker: subprocess.Popen[bytes], aim: str, delay_s: float, load: asyncio.Task[None]
) -> Kill:
    """SIGKILL `worker` now and reap it."""
    alive = worker.poll() is None
    during_load = not load.done()
    worker.send_signal(signal.SIGKILL)
    status = worker.wait(timeout=10)
    return Kill(aim, delay_s, alive, status, during_load)


@pytest.mark.parametrize("engine", ENGINES)
async def test_kills_under_load_end_equal_to_a_clean_fold(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("kill-load"),
        engine=engine,
        store="memory",  # every restart restores its whole state from the changelog
        data_dir=tmp_path / "data",
        batch_size=100,
        session_timeout_s=6.0,  # a killed worker's partitions move on sooner
        compaction_request_timeout_s=RETRY_TIMEOUT_S,
        compaction_request_max_attempts=MAX_ATTEMPTS,
        request_check_interval_s=0.5,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    rng = random.Random(SEED)  # noqa: S311 - picks kill points, not secrets
    kills: list[Kill] = []

    started = time.monotonic()
    load = asyncio.create_task(append_load(settings))
    log_path = tmp_path / "worker-0.log"
    worker = start_worker(settings, log_path)
    try:
        for number, aim in enumerate(KILLS, start=1):
            if aim == "mid-batch":
                await wait_for_line(log_path, EMITTING)
                delay_s = rng.uniform(*MID_BATCH_S)
            else:
                await wait_for_line(log_path, STARTING)
                delay_s = rng.uniform(*SOON_AFTER_START_S)
            await asyncio.sleep(delay_s)
            kills.append(kill(worker, aim, delay_s, load))
            assert kills[-1].alive, f"the worker had exited before kill {number}: {kills}"
            assert kills[-1].status == -signal.SIGKILL, kills
            log_path = tmp_path / f"worker-{number}.log"
            worker = start_worker(settings, log_path)
        await load
        assert any(k.during_load for k in kills), f"no kill while the load ran: {kills}"

        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)

        decided = [r for _, requests in folded.values() for r in requests]
        by_id = {r.request_id: r for r in decided}
        assert decided
        assert len(by_id) == len(decided), "the clean fold decided one request twice"
        requests_topic = settings.topic("compaction-requests")
        emitted: list[CompactionRequest] = []

        async def every_request_emitted() -> bool:
            nonlocal emitted
            emitted = await requests_on(kafka_bootstrap, requests_topic)
            return {r.request_id for r in emitted} >= set(by_id)

        await wait_for(
            "every decided request on the topic", every_request_emitted, EMITTED_TIMEOUT_S
        )
        assert {r.request_id for r in emitted} == set(by_id)
        for request in emitted:
            assert request.model_copy(update={"attempt": 1}) == by_id[request.request_id]
        if engine == "native":  # requests of aborted transactions are never read
            first = Counter(r.request_id for r in emitted if r.attempt == 1)
            assert first == Counter(r.request_id for r in decided), {
                i: n for i, n in first.items() if n != 1
            }
    finally:
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
        stop_worker(worker)
    assert worker.returncode == 0
    in_table = await changelog_offsets(kafka_bootstrap, settings)
    assert_changelog_holds(in_table, log)
    logger.info("%s: %.1f s, kills %s", engine, time.monotonic() - started, kills)
