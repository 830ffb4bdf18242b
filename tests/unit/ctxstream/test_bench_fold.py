"""The offline fold benchmark's command (timings are printed, never asserted)."""

from __future__ import annotations

import gc
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
    parts = (
        figures["project_us_per_event"]
        + figures["snapshot_us_per_event"]
        + figures["settle_us_per_event"]
    )
    assert figures["us_per_event"] == pytest.approx(parts, abs=0.03)
    assert set(figures["gc"]) == {
        "policy",
        "seconds",
        "share",
        "collections",
        "collected",
        "whole_collections",
        "whole_s",
        "heap_objects",
    }
    assert figures["gc"]["policy"] == "frozen"  # the worker's, by default
    assert figures["gc"]["whole_collections"] >= 1  # the policy's start
    assert 0 <= figures["gc"]["share"] < 1
    assert figures["seconds"] == pytest.approx(
        figures["us_per_event"] * figures["applied"] / 1e6, rel=0.01
    )
    text = capsys.readouterr().out
    assert text.startswith(f"us_per_event {figures['us_per_event']}\n")
    assert f"gc_share {figures['gc']['share']}\n" in text


def test_the_fold_runs_under_the_policy_asked_and_gives_the_collector_back(
    tmp_path: Path,
) -> None:
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    figures = {}
    for policy in ("python", "off", "automatic"):
        path = tmp_path / f"{policy}.json"
        argv = ["bench", "fold", "--events", "400", "--sessions", "4", "--gc", policy]
        assert main([*argv, "--json", str(path)]) == 0
        figures[policy] = json.loads(path.read_text(encoding="utf-8"))["gc"]
        assert (gc.get_threshold(), gc.isenabled()) == (threshold, enabled)
        assert gc.get_freeze_count() == 0
    # Python's rules collect generation 0 every 700 tracked objects, the worker's every
    # 200,000; with the collector off nothing is collected in the timed calls.
    assert figures["python"]["collections"][0] > figures["automatic"]["collections"][0]
    assert figures["off"]["collections"] == [0, 0, 0]
    assert [figures[policy]["policy"] for policy in figures] == ["python", "off", "automatic"]


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
