"""``ctxstream bench compaction`` runs the pipeline on the real broker and reports its figures."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BENCH_TIMEOUT_S = 300.0  # two worker starts, the workload, the settle wait


async def test_the_benchmark_reports_latencies_without_duplicates_or_missing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    report = tmp_path / "compaction.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "streams",
        "bench",
        "compaction",
        "--json",
        str(report),
        "--sessions",
        "10",
        "--invocations",
        "7",
        "--round-pause-s",
        "0.3",
        env={**os.environ, "CTXSTREAM_KAFKA_BOOTSTRAP": kafka_bootstrap},
        cwd=tmp_path,  # the workers' logs and data go to .run/ under it
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), BENCH_TIMEOUT_S)
    assert process.returncode == 0, stderr.decode()[-3000:]
    figures = json.loads(report.read_text(encoding="utf-8"))
    assert sorted(figures) == ["duplicates", "missing", "p50_ms", "p99_ms", "summaries_per_s"]
    assert (figures["duplicates"], figures["missing"]) == (0, 0)
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
    assert figures["summaries_per_s"] > 0
    assert b"requests=" in stdout
