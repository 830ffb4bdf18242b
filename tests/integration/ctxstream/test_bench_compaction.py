"""``ctxstream bench compaction`` runs the pipeline on the real broker and reports its figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxstream.bench.compaction_hops import HOPS
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
        "hops",
        "missing",
        "p50_ms",
        "p99_ms",
        "summaries_per_s",
        "workload",
    ]
    # The hops the records show: every one on native, which stamps its batches; faust
    # stamps nothing, so the two hops around the projector's batch are unknown there.
    unstamped = {"projector_wait", "projector_fold", "fold_wait", "fold"}
    expected = [hop.name for hop in HOPS if engine == "native" or hop.name not in unstamped]
    assert list(figures["hops"]) == expected
    for name, hop in figures["hops"].items():
        assert hop["requests"] > 0, name
        assert hop["p50_ms"] <= hop["p99_ms"], name
    if engine == "native":  # the hops add up to the latency
        assert sum(hop["share"] for hop in figures["hops"].values()) == pytest.approx(1, abs=0.01)
    assert "hop=summarizer_read" in stdout
    assert figures["engine"] == engine
    assert (figures["duplicates"], figures["missing"]) == (0, 0)
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
    assert figures["summaries_per_s"] > 0
    # Paced in 10 ms steps: the rate reached is the one asked, give or take a step's worth.
    assert 200 <= figures["background_events_per_s"] <= 310
    # The measured sessions and the background are the agents workload: several tenants and
    # apps, requests decided by the apps' own configs and their summaries folded.
    workload = figures["workload"]
    assert workload["tenants"] > 1
    assert workload["apps"] > 1
    assert workload["events"] >= 10 * 7 * 3  # the measured sessions' invocations at least
    assert 0 < workload["summaries_folded"] <= workload["requests_decided"]
    # Each worker logged what its collections cost as it stopped: the projector steers its
    # collector (frozen: whole collections, the start's at least), the summarizer measures it.
    assert figures["gc"]["projector"]["mode"] == "frozen"
    assert int(figures["gc"]["projector"]["whole"]) >= 1
    assert figures["gc"]["summarizer"]["mode"] == "automatic"
    assert all(0 <= float(gc["cpu_share"]) < 1 for gc in figures["gc"].values())
    assert "projector_gc_cpu_share=" in stdout
    assert f"engine={engine}" in stdout
    assert f"workload_requests_decided {workload['requests_decided']}" in stdout
    assert "requests=" in stdout
