"""``ctxstream bench restore`` runs on the real broker and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxstream.bench.workload import bench_session
from schemas.codec import encode
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

SIZES = (60, 240)


async def test_the_benchmark_reports_restore_time_and_state_per_size(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap, tmp_path, "restore", "--sizes", *(str(size) for size in SIZES)
    )
    results = figures["results"]
    assert [result["events"] for result in results] == list(SIZES)
    for result in results:
        assert result["dead_letters"] == 0
        assert result["changelog_s"] > 0
        assert result["first_fold_s"] > 0
        assert result["restore_s"] == pytest.approx(
            result["changelog_s"] + result["first_fold_s"], abs=2e-4
        )
        assert sorted(result["gc"]) == ["collected", "collections", "seconds", "share"]
        assert 0 <= result["gc"]["share"] < 1
    # Compaction lets the longer session release its start: it holds less than its records.
    records = sum(len(encode(record.envelope)) for record in bench_session(SIZES[1]))
    assert 0 < results[1]["state_bytes"] < records / 2
    lines = stdout.splitlines()
    assert lines[0].split() == [
        "events",
        "restore_s",
        "changelog_s",
        "first_fold_s",
        "state_bytes",
        "restore_x",
        "state_x",
        "gc_share",
    ]
    assert [line.split()[0] for line in lines[1:]] == [str(size) for size in SIZES]
