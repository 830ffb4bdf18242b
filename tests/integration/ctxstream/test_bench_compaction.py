"""``ctxstream bench compaction`` runs the pipeline on the real broker and reports its figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import run_bench

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ["native", "faust"])
async def test_the_benchmark_reports_latencies_without_duplicates_or_missing(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap,
        tmp_path,
        "compaction",
        "--sessions",
        "10",
        "--invocations",
        "7",
        "--round-pause-s",
        "0.3",
        "--engine",
        engine,
        "--background-events-per-s",
        "300",
    )
    assert sorted(figures) == [
        "background_events_per_s",
        "duplicates",
        "engine",
        "gc",
        "missing",
        "p50_ms",
        "p99_ms",
        "summaries_per_s",
    ]
    assert figures["engine"] == engine
    assert (figures["duplicates"], figures["missing"]) == (0, 0)
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
    assert figures["summaries_per_s"] > 0
    # Paced in 10 ms steps: the rate reached is the one asked, give or take a step's worth.
    assert 200 <= figures["background_events_per_s"] <= 310
    # Each worker logged what its collections cost as it stopped: the projector steers its
    # collector (frozen: whole collections, the start's at least), the summarizer measures it.
    assert figures["gc"]["projector"]["mode"] == "frozen"
    assert int(figures["gc"]["projector"]["whole"]) >= 1
    assert figures["gc"]["summarizer"]["mode"] == "automatic"
    assert all(0 <= float(gc["cpu_share"]) < 1 for gc in figures["gc"].values())
    assert "projector_gc_cpu_share=" in stdout
    assert f"engine={engine}" in stdout
    assert "requests=" in stdout
