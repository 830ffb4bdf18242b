"""``ctxstream bench ingest`` runs on the real broker and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

EVENTS = 3_000
SESSIONS = 30


async def test_the_benchmark_reports_both_engines_the_raw_consumer_and_faust_floor(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap,
        tmp_path,
        "ingest",
        "--events",
        str(EVENTS),
        "--sessions",
        str(SESSIONS),
    )
    assert (figures["events"], figures["sessions"]) == (EVENTS, SESSIONS)
    engines = figures["engines"]
    assert sorted(engines) == ["faust", "native"]
    raw, floor = figures["raw_events_per_s"], figures["faust_floor_events_per_s"]
    assert min(raw, floor, *(e["events_per_s"] for e in engines.values())) > 0
    # Each rate is the events over its own measured seconds (written rounded to
    # milliseconds), each ratio over raw.
    timed = [
        (raw, figures["raw_seconds"]),
        (floor, figures["faust_floor_seconds"]),
        *((e["events_per_s"], e["seconds"]) for e in engines.values()),
    ]
    for rate, seconds in timed:
        # Rates are written rounded to 0.1 events/s.
        low, high = EVENTS / (seconds + 0.0005), EVENTS / max(seconds - 0.0005, 1e-9)
        assert low - 0.05 <= rate <= high + 0.05
    for engine in engines.values():
        assert engine["ratio"] == pytest.approx(engine["events_per_s"] / raw, abs=1e-3)
        # The engines steer the collector as the worker does (frozen after each batch).
        assert sorted(engine["gc"]) == ["collected", "collections", "seconds", "share"]
        assert 0 <= engine["gc"]["share"] < 1
    assert figures["gc_mode"] == "frozen"
    assert figures["native_over_faust"] == pytest.approx(
        engines["native"]["events_per_s"] / engines["faust"]["events_per_s"], rel=1e-3
    )
    assert figures["faust_floor_ratio"] == pytest.approx(floor / raw, abs=1e-3)
    # The agents workload and its requests; the answers folded in the run answer some of them.
    workload = figures["workload"]
    assert (workload["events"], workload["sessions"]) == (EVENTS, SESSIONS)
    assert workload["tenants"] > 1
    assert workload["apps"] > 1
    for engine in engines.values():
        assert engine["requests_decided"] > 0
        assert 0 <= engine["summaries_folded"] <= engine["requests_decided"]
    printed = dict(line.split() for line in stdout.splitlines() if line.strip())
    assert float(printed["native_ratio"]) == engines["native"]["ratio"]
    assert float(printed["faust_ratio"]) == engines["faust"]["ratio"]
    assert float(printed["native_over_faust"]) == figures["native_over_faust"]
    assert float(printed["faust_floor_ratio"]) == figures["faust_floor_ratio"]
    assert int(printed["native_summaries_folded"]) == engines["native"]["summaries_folded"]
    assert int(printed["workload_events"]) == EVENTS
    assert float(printed["native_gc_share"]) == engines["native"]["gc"]["share"]
