"""The core benchmark's workload and its command (timings are printed, never asserted)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from projections.bench_workload import BENCH_SESSION, bench_session
from projections.contents import ContentsRequest
from projections.masking import is_summary
from projections.projection import context_contents, project
from projections.rebuild import rebuild_contents
from projections.summary_request import summary_request_id
from streams.cli import main


def test_workload_is_deterministic_and_exactly_as_long_as_asked() -> None:
    first = bench_session(300, seed=7)
    assert first == bench_session(300, seed=7)
    assert first != bench_session(300, seed=8)
    assert len(first) == 300
    assert [r.offset for r in first] == list(range(300))
    assert bench_session(0) == []
    with pytest.raises(ValueError, match="summary_every"):
        bench_session(10, summary_every=0)


def test_workload_summaries_roll_and_name_their_requests() -> None:
    events = [record.envelope.event for record in bench_session(600)]
    summaries = [e for e in events if is_summary(e)]
    assert len(summaries) >= 10
    ranges = []
    for summary in summaries:
        compaction = summary.actions.compaction
        assert compaction is not None
        assert summary.author == "user"
        assert summary.content is None
        assert summary_request_id(summary) is not None
        ranges.append((compaction.start_timestamp, compaction.end_timestamp))
    # Each summary starts where the previous one did and reaches further.
    assert len({start for start, _ in ranges}) == 1
    assert all(a[1] < b[1] for a, b in itertools.pairwise(ranges))


def test_visible_context_stays_bounded_and_matches_a_rebuild() -> None:
    for size in (200, 2_000):
        records = bench_session(size)
        projection = project(BENCH_SESSION, records)
        contents = context_contents(projection)
        assert contents == rebuild_contents(records, ContentsRequest())
        # A summary and at most five invocations of ~12 events.
        assert len(contents) <= 60
        assert len(projection.view.raw) <= 60


def test_bench_core_command_writes_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "bench.json"
    status = main(["bench", "core", "--json", str(target), "--sizes", "40", "80", "--repeats", "1"])
    assert status == 0
    report = json.loads(target.read_text(encoding="utf-8"))
    assert [row["events"] for row in report["results"]] == [40, 80]
    for row in report["results"]:
        assert set(row) == {"events", "read_s", "rebuild_s", "apply_s"}
        assert all(row[key] > 0 for key in ("read_s", "rebuild_s", "apply_s"))
    table = capsys.readouterr().out
    assert "read_s" in table
    assert len(table.splitlines()) == 3
