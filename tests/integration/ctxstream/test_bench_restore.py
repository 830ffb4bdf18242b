"""``ctxstream bench restore`` runs on the real broker and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxstream.bench.workload import bench_session
from schemas.codec import encode
from schemas.logged_event import LoggedEvent
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

SIZES = (60, 240)


async def test_the_benchmark_reports_restore_time_and_state_per_size(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap, tmp_path, "restore", "--sizes", *(str(size) for size in SIZES)
    )
    results = figures["results"]
    assert [result["events"] for result in results] == list(SIZES)
    for result in results:
        assert result["dead_letters"] == 0
        assert result["changelog_s"] > 0
        assert result["first_fold_s"] > 0
        assert result["restore_s"] == pytest.approx(
            result["changelog_s"] + result["first_fold_s"], abs=2e-4
        )
        assert sorted(result["gc"]) == ["collected", "collections", "seconds", "share"]
        assert 0 <= result["gc"]["share"] < 1
    # Compaction lets the longer session release its start: it holds less than its records.
    session = bench_session(SIZES[1])
    records = sum(len(encode(record.envelope)) for record in session)
    assert 0 < results[1]["state_bytes"] < records / 2
    # What it keeps of the released events: 8 bytes for each id they named, at most.
    longer = results[1]
    released = longer["released_events"]
    assert 0 < released < SIZES[1]
    assert 0 < longer["released_id_bytes"] <= 8 * len(_named(session[:released]))
    assert longer["released_id_bytes"] % 8 == 0
    assert longer["bytes_per_released_event"] == round(longer["released_id_bytes"] / released, 3)
    lines = stdout.splitlines()
    assert lines[0].split() == [
        "events",
        "restore_s",
        "changelog_s",
        "first_fold_s",
        "state_bytes",
        "restore_x",
        "state_x",
        "gc_share",
        "released_events",
        "id_bytes_per_released_event",
    ]
    assert [line.split()[0] for line in lines[1:]] == [str(size) for size in SIZES]


def _named(records: list[LoggedEvent]) -> set[tuple[str, str]]:
    """Every invocation, call and request id the records name (the bench session has no others)."""
    named: set[tuple[str, str]] = set()
    for record in records:
        event = record.envelope.event
        named.add(("invocation", event.invocation_id))
        for part in event.content.parts or () if event.content is not None else ():
            for mention in (part.function_call, part.function_response):
                if mention is not None and mention.id:
                    named.add(("call", mention.id))
        request = (event.custom_metadata or {}).get("ctxstream", {}).get("compaction_request_id")
        if request:
            named.add(("request", request))
    return named
