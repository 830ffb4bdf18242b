"""The offline fold benchmark's command (timings are printed, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxstream.bench.fold import source_records
from ctxstream.cli.main import main
from schemas.kafka.partitioning import session_partition


def test_the_command_folds_every_record_and_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fold.json"
    argv = ["bench", "fold", "--events", "300", "--sessions", "6", "--batch-size", "100"]
    assert main([*argv, "--json", str(path)]) == 0
    figures = json.loads(path.read_text(encoding="utf-8"))
    assert (figures["events"], figures["applied"], figures["batches"]) == (300, 300, 3)
    # Every batch touches every one of the six sessions (each burst is about ten events).
    assert figures["snapshots"] == 18
    assert figures["dead_letters"] == 0
    assert figures["us_per_event"] > 0
    parts = figures["project_us_per_event"] + figures["snapshot_us_per_event"]
    assert figures["us_per_event"] == pytest.approx(parts, abs=0.02)
    assert figures["seconds"] == pytest.approx(
        figures["us_per_event"] * figures["applied"] / 1e6, rel=0.01
    )
    assert capsys.readouterr().out.startswith(f"us_per_event {figures['us_per_event']}\n")


def test_records_sit_on_their_keys_partitions_with_offsets_counted_per_partition() -> None:
    records = source_records(200, 5, topic="events", partitions=3)
    assert len(records) == 200
    for partition in range(3):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == list(range(len(offsets)))
    assert all(r.key is not None and r.partition == session_partition(r.key, 3) for r in records)


def test_a_profile_is_written_when_asked(tmp_path: Path) -> None:
    profile = tmp_path / "fold.prof"
    argv = ["bench", "fold", "--events", "60", "--sessions", "2", "--profile", str(profile)]
    assert main(argv) == 0
    assert profile.stat().st_size > 0
