"""``ctxstream bench memory`` runs on the real PostgreSQL and reports consistent figures."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from psycopg import AsyncConnection

pytestmark = pytest.mark.integration

BENCH_TIMEOUT_S = 120.0  # 2,000 memories loaded and 100 searches, on a shared machine


async def test_the_benchmark_reports_percentiles_and_leaves_no_schema(
    postgres_dsn: str, tmp_path: Path
) -> None:
    report = tmp_path / "figures.json"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "ctxstream", "bench", "memory"),
        *("--memories", "2000", "--queries", "100", "--dsn", postgres_dsn, "--json", str(report)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), BENCH_TIMEOUT_S)
    assert process.returncode == 0, stderr.decode()[-3000:]

    figures = json.loads(report.read_text(encoding="utf-8"))
    assert (figures["memories"], figures["queries"], figures["scopes"]) == (2000, 100, 200)
    assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert figures["load_memories_per_s"] > 0
    # Every question has an answer in its scope (the workload's own test); most are found.
    assert 0.5 < figures["answered_share"] <= 1
    lines = dict(line.split(None, 1) for line in stdout.decode().splitlines())
    assert float(lines["p95"].split()[0]) == pytest.approx(figures["p95_ms"], abs=0.005)
    async with await AsyncConnection.connect(postgres_dsn) as connection:
        cursor = await connection.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench_memory_%'"
        )
        assert await cursor.fetchone() == (0,)
