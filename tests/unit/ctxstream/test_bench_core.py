"""The core benchmark's workload and its command (timings are printed, never asserted)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from ctxstream.cli.main import main
from projections.contents.assembly import ContentsRequest
from projections.event_kinds import is_summary, summary_request_id
from projections.fold.projection import context_contents, project
from projections.fold.rebuild import rebuild_contents


def test_workload_picks_follow_the_seed_and_it_is_exactly_as_long_as_asked() -> None:
    first = bench_session(300, seed=7)
    # Each pick is the first 8 bytes of BLAKE2b("<seed>:<invocation>:<purpose>") modulo its
    # count, worked out with `b2sum -l 64` for seed 7, invocation 1: "calls" 7730014471443709160
    # % 3 = 2 (three calls), "user-delta" 3993992371027337734 % 2 = 0 (no delta), "prompt"
    # 17459112000810459483 % 400 = 283, "candidates" 12387049519061488320 % 60 = 0,
    # "state-event" 13150481725705323072 % 3 = 0 (a state-only event ends the invocation).
    inv1 = [r.envelope.event for r in first if r.envelope.event.invocation_id == "inv1"]
    assert [e.author for e in inv1] == ["user"] + ["agent"] * 9
    assert inv1[0].actions.state_delta == {}
    calls = [
        part.function_call.id
        for e in inv1
        for part in (e.content.parts or [] if e.content else [])
        if part.function_call is not None
    ]
    assert calls == ["c1-0", "c1-1", "c1-2"]
    usage = inv1[8].usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (800 + 283, 40 + 0)
    assert inv1[9].content is None
    assert inv1[9].actions.state_delta == {"temp:scratch": 1, "step": "done"}
    assert first[10].envelope.event.invocation_id == "inv2"
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
        # The bench's model turns are its agent's: the view is for it, who runs next.
        assert projection.view.request == ContentsRequest(agent_name="agent")
        assert contents == rebuild_contents(records, ContentsRequest(agent_name="agent"))
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
        assert set(row) == {
            "events",
            "build_s",
            "build_us_per_event",
            "gc",
            "read_s",
            "rebuild_s",
            "apply_s",
            "decide_s",
        }
        assert all(row[key] > 0 for key in ("build_s", "read_s", "rebuild_s", "apply_s"))
        # build_s is written to 0.1 ms, the rate from the unrounded seconds.
        assert row["build_us_per_event"] == pytest.approx(
            row["build_s"] * 1e6 / row["events"], abs=50 / row["events"] + 0.01
        )
        assert row["gc"]["policy"] == "frozen"  # the worker's, by default
        assert row["gc"]["heap_objects"] > 0
    table = capsys.readouterr().out
    assert "read_s" in table
    assert "build_us" in table
    assert len(table.splitlines()) == 3


def test_bench_core_builds_under_the_policy_asked(tmp_path: Path) -> None:
    # Python's own rules collect generation 0 every 700 objects: a session of 300 events
    # makes far more. With the collector off, nothing is collected while it is built.
    figures = {}
    for policy in ("python", "off"):
        target = tmp_path / f"{policy}.json"
        argv = ["bench", "core", "--json", str(target), "--sizes", "300", "--repeats", "1"]
        assert main([*argv, "--gc", policy]) == 0
        (row,) = json.loads(target.read_text(encoding="utf-8"))["results"]
        figures[policy] = row["gc"]
    assert figures["python"]["policy"] == "python"
    assert figures["python"]["collections"][0] > 0
    assert figures["off"]["collections"] == [0, 0, 0]
    assert figures["off"]["seconds"] == 0
