"""The worked example (``examples/adk``) runs end to end against a deployment.

``python -m examples.adk.run_example`` as the README gives it, on a deployment of the
test (worker, summarizer, sink on the shared broker and PostgreSQL), its app owned by
the pipeline with a short window so summaries land within the run. The oracle for each
turn is ADK's ``InMemorySessionService`` the example runs beside ctxstream: with
``view=full`` ctxstream holds the same events plus the pipeline's summaries.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Final

import pytest

from projections.compaction.config import CompactionConfig
from tests.integration.adk.conftest import adk_deployment_of

pytestmark = [pytest.mark.integration]

REPO: Final = Path(__file__).resolve().parents[3]
TURNS: Final = 8
RUN_TIMEOUT_S: Final = 120.0
#: A turn's counts line: ctxstream's events (summaries) ... in-memory events.
_COUNTS: Final = re.compile(r"^\s+(\d+) events \((\d+)\)\s.*?\s(\d+) events\s", re.MULTILINE)


def test_the_example_runs_and_compacts_through_the_pipeline(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path: Path
) -> None:
    tenant = f"ex{uuid.uuid4().hex[:12]}"
    window = CompactionConfig(compaction_interval=3, overlap_size=1)
    with adk_deployment_of(
        kafka_bootstrap,
        postgres_dsn,
        tmp_path,
        compaction_overrides={tenant: window},
        summarizer=True,
    ) as deployment:
        env = {
            **os.environ,
            "CTXSTREAM_KAFKA_BOOTSTRAP": kafka_bootstrap,
            "CTXSTREAM_TOPIC_PREFIX": deployment.prefix,
            "CTXSTREAM_POSTGRES_DSN": deployment.dsn,
            "CTXSTREAM_SINK_SCHEMA": deployment.schema,
        }
        command = [sys.executable, "-m", "examples.adk.run_example", "--tenant", tenant]
        command += ["--turns", str(TURNS)]
        done = subprocess.run(
            command, cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    counts = [tuple(map(int, found)) for found in _COUNTS.findall(done.stdout)]
    assert len(counts) == TURNS, done.stdout
    # Every event ADK's in-memory service holds, plus the pipeline's summaries.
    assert [held - summaries for held, summaries, _ in counts] == [kept for *_, kept in counts]
    assert counts[-1][1] >= 2, done.stdout  # summaries after turns 3 and 6
    memory = done.stdout.split("memory, 'weather in Oslo':", 1)[1]
    assert "Oslo" in memory, done.stdout
