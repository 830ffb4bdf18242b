"""``ctxstream bench neighbours`` runs every phase and pattern and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

PATTERNS = {
    "parked_reads",
    "as_of_reads",
    "forks",
    "batches",
    "huge_batch",
    "subscriptions",
    "wrong_secrets",
    "over_cap",
}
#: One loop of each pattern, small sessions and batches: the instrument, not the load.
LIGHT_LOAD = (
    *("--seconds", "3", "--quiet-sessions", "2", "--big-session-events", "300"),
    *("--parked-reads", "1", "--as-of-reads", "1", "--forks", "1", "--batches", "1"),
    *("--batch-events", "10", "--huge-batch-events", "100", "--huge-batch-every-s", "1"),
    *("--subscriptions", "1", "--wrong-secrets", "1", "--over-cap-appends", "1"),
)


async def test_every_quiet_round_trip_reads_its_own_write_beside_every_noisy_pattern(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(kafka_bootstrap, tmp_path, "neighbours", *LIGHT_LOAD)
    phases = {phase["name"]: phase for phase in figures["phases"]}
    assert list(phases) == ["alone", "with_noisy", "alone_again"]
    for phase in phases.values():
        # Every round trip was answered 200 twice, the read showing the append's own text.
        assert phase["failures"] == {}, phase
        assert phase["round_trips"] > 0
        assert phase["seconds"] >= 3
        assert 0 < phase["p50_ms"] <= phase["p99_ms"] <= phase["max_ms"]
    assert figures["quiet_failures"] == 0
    alone = min((phases["alone"], phases["alone_again"]), key=lambda phase: phase["p99_ms"])
    assert figures["quiet_p99_ms_alone"] == alone["p99_ms"]
    assert figures["quiet_p50_ms_alone"] == alone["p50_ms"]
    assert figures["quiet_p99_ms_with_noisy"] == phases["with_noisy"]["p99_ms"]
    assert figures["ratio"] == pytest.approx(
        phases["with_noisy"]["p99_ms"] / alone["p99_ms"], abs=1e-3
    )
    # Every pattern sent requests, and each was counted under an outcome.
    outcomes = figures["noisy_outcomes"]
    assert set(outcomes) == PATTERNS
    assert all(sum(counts.values()) > 0 for counts in outcomes.values())
    assert figures["noisy_load"]["huge_batch_events"] == 100
    assert figures["big_session_events"] == 300
    lines = stdout.splitlines()
    assert lines[3].split()[:4] == ["quiet", "p99", "with", "noisy"]
    # The text prints the JSON figure to one decimal (257.05 prints as 257.1: compare the text).
    assert lines[3].split()[4] == f"{figures['quiet_p99_ms_with_noisy']:.1f}"
    assert lines[4].split()[:2] == ["ratio", f"{figures['ratio']:.2f}"]
    assert sorted(line.split()[1] for line in lines if line.startswith("noisy ")) == sorted(
        PATTERNS
    )
