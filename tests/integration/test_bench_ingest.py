"""``ctxstream bench ingest`` runs on the real broker and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.bench_support import run_bench

pytestmark = pytest.mark.integration

EVENTS = 3_000
SESSIONS = 30


async def test_the_benchmark_reports_the_projector_the_raw_consumer_and_faust_floor(
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
    projector, raw, floor = (
        figures["projector_events_per_s"],
        figures["raw_events_per_s"],
        figures["faust_floor_events_per_s"],
    )
    assert min(projector, raw, floor) > 0
    # Each rate is the events over its own measured seconds, each ratio over raw.
    assert projector == pytest.approx(EVENTS / figures["projector_seconds"], rel=1e-2)
    assert raw == pytest.approx(EVENTS / figures["raw_seconds"], rel=1e-2)
    assert floor == pytest.approx(EVENTS / figures["faust_floor_seconds"], rel=1e-2)
    assert figures["ratio"] == pytest.approx(projector / raw, abs=1e-3)
    assert figures["faust_floor_ratio"] == pytest.approx(floor / raw, abs=1e-3)
    printed = dict(line.split() for line in stdout.splitlines() if line.strip())
    assert float(printed["ratio"]) == figures["ratio"]
    assert float(printed["faust_floor_ratio"]) == figures["faust_floor_ratio"]
