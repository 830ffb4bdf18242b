"""``ctxstream bench reads`` runs on the real broker and reads what the sessions hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxstream.bench.reads import VIEW_AGENT, reads_session
from ctxstream.bench.workload import bench_session
from projections.contents.contents_request import ContentsRequest
from projections.contents.snapshot import context_fingerprint
from projections.fold.rebuild import rebuild_contents
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

SIZES = (100, 600)
READS = 5


async def test_the_benchmark_reports_read_times_of_the_contexts_the_rebuild_assembles(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap,
        tmp_path,
        "reads",
        "--sizes",
        *(str(size) for size in SIZES),
        "--reads",
        str(READS),
    )
    results = figures["results"]
    assert [result["events"] for result in results] == list(SIZES)
    for result in results:
        assert result["reads"] == READS
        for figure in ("p50_ms", "p99_ms", "min_offset_p50_ms", "min_offset_p99_ms"):
            assert result[figure] > 0
        assert result["p99_ms"] >= result["p50_ms"]
        # What every timed read answered is the session's context as the oracle assembles it.
        key = reads_session(result["events"])
        expected = rebuild_contents(
            bench_session(result["events"], session_key=key), ContentsRequest(agent_name=VIEW_AGENT)
        )
        assert result["context_items"] == len(expected) > 0
        assert result["context_fingerprint"] == context_fingerprint(expected)
    for ratio in ("ratio_p50", "ratio_p99", "min_offset_ratio_p50", "min_offset_ratio_p99"):
        assert figures[ratio] > 0
    assert figures["ratio_p50"] == pytest.approx(
        results[1]["p50_ms"] / results[0]["p50_ms"], abs=1e-3
    )
    lines = stdout.splitlines()
    assert lines[0].split()[:4] == ["events", "reads", "p50_ms", "p99_ms"]
    assert [line.split()[0] for line in lines[1:-1]] == [str(size) for size in SIZES]
    assert lines[-1].startswith("ratio p50 ")
