"""A projector worker whose folding dies exits with a non-zero status (so its supervisor
restarts it) instead of staying up while it processes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.codec import encode
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    REPO,
    append,
    create_deployment_topics,
    projector_settings,
    scripted_sessions,
    settings_env,
)

pytestmark = pytest.mark.integration

EXIT_TIMEOUT_S = 90.0

# The worker process with one fault injected: every batch fails as a failed send would.
FAULTS = {
    "faust": """
import streams.faust_engine.projector as projector


async def failing_batch(self, events):
    raise RuntimeError("injected: the broker refused the batch's outputs")


projector.ProjectorShell.project = failing_batch
""",
    "native": """
import streams.native_engine.engine as native_engine


async def failing_commit(self, *_):
    raise RuntimeError("injected: the broker refused the batch's outputs")


native_engine.NativeProjector._commit = failing_commit
""",
}
RUN = """
from streams.projector_settings import ProjectorSettings
from streams.worker import run_worker

run_worker(ProjectorSettings())
"""
#: What each engine logs when it stops on a failure of its own.
STOPPING = {
    "faust": "folding events failed; the worker stops",
    "native": "projector failed; exiting with status 1",
}


async def _run_faulted(
    kafka_bootstrap: str, tmp_path: Path, engine: str, script: str
) -> tuple[int, str]:
    """Run a worker of `engine` with `script` before it, over one session; its status and log."""
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("exit"),
        data_dir=tmp_path / "data",
        events_partitions=1,
        engine=engine,
    )
    await create_deployment_topics(settings)
    events = scripted_sessions(1, 1)
    await append(
        kafka_bootstrap,
        settings.topic("events"),
        [(e.session_key.encode(), encode(e)) for e in events],
    )
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.run(  # noqa: ASYNC221 - the test waits for the process on purpose
            [sys.executable, "-c", script + RUN],
            cwd=REPO,
            env={**os.environ, **settings_env(settings)},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=EXIT_TIMEOUT_S,
            check=False,
        )
    return worker.returncode, log.read_text()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_worker_whose_folding_dies_exits_non_zero(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    status, text = await _run_faulted(kafka_bootstrap, tmp_path, engine, FAULTS[engine])
    assert status != 0, text[-3000:]
    assert STOPPING[engine] in text
    assert "injected: the broker refused" in text


# The faust worker's stop never comes (its crash hangs): the process still exits, with
# the failure status, once the crash's grace has passed.
STUCK_STOP = """
import asyncio

import faust.worker

import streams.faust_engine.worker as worker


async def hanging_crash(self, exc):
    await asyncio.Event().wait()


faust.worker.Worker.crash = hanging_crash
worker.CRASH_STOP_GRACE_S = 3.0
"""


async def test_a_crashed_faust_worker_whose_stop_hangs_exits_all_the_same(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    status, text = await _run_faulted(
        kafka_bootstrap, tmp_path, "faust", FAULTS["faust"] + STUCK_STOP
    )
    assert status == 1, text[-3000:]
    assert "the worker did not stop within 3 s of its crash; exiting" in text, text[-4000:]
