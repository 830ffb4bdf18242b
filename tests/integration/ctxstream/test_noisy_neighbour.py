"""A noisy tenant at every budget's limit does not fail a quiet tenant's read-your-writes.

The quiet tenant appends one event at a time through the HTTP API and reads
its session's context with ``min_offset`` = that event's offset; the noisy
tenant meanwhile runs every costly pattern of the security review at once
(:mod:`ctxstream.bench.neighbours_noisy`, its default load: a little above the budgets).
Each of the quiet tenant's round trips must be answered, with its own write
visible. Both p99s (alone and beside the noisy tenant) are recorded, never
asserted: performance belongs to ``ctxstream bench neighbours``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxstream.bench.neighbours import NeighboursBenchConfig, run_neighbours_bench
from schemas.kafka.settings import KafkaSettings

pytestmark = pytest.mark.integration
logger = logging.getLogger(__name__)

PHASE_S = 5.0


async def test_the_quiet_tenant_reads_its_own_writes_while_the_noisy_one_runs_every_pattern(
    kafka_bootstrap: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    config = NeighboursBenchConfig(seconds=PHASE_S, again=False, run_dir=tmp_path)
    report = await run_neighbours_bench(KafkaSettings(kafka_bootstrap=kafka_bootstrap), config)
    alone, noisy = report.phase("alone"), report.phase("with_noisy")
    record_property("quiet_p99_ms_alone", alone.p99_ms)
    record_property("quiet_p99_ms_with_noisy", noisy.p99_ms)
    logger.info("quiet p99 alone %s ms, with the noisy tenant %s ms", alone.p99_ms, noisy.p99_ms)
    # The noisy tenant did run: every pattern sent requests.
    assert len(report.noisy_outcomes) == 8
    assert all(sum(counts.values()) > 0 for counts in report.noisy_outcomes.values())
    for phase in (alone, noisy):
        assert phase.round_trips > 0
        # No quiet round trip failed: each append and its read answered 200, the write shown.
        assert phase.failures == {}, f"{phase.name}: {phase.failures} ({report.noisy_outcomes})"
