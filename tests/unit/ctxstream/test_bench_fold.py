"""The offline fold benchmark: its command, its feed, the agents workload through the batch step.

Timings are printed, never asserted. The oracle of "summaries applied" is the
snapshots the batch step publishes (a session's compaction boundary names the
request its newest summary answers), read back here.
"""

from __future__ import annotations

import gc
import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxstream.bench.agents.offline import OfflineFeed
from ctxstream.bench.agents.settings import DEFAULT_PREFIX, with_workload_apps
from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.cli.main import main
from projections.event_kinds import summary_request_id
from schemas.codec import decode_envelope, decode_projection_snapshot
from schemas.compaction_request import CompactionRequest
from schemas.kafka.partitioning import session_partition
from streams.batch import BatchProjector, SessionCache, SourceRecord
from streams.native_engine.store import MemoryPartitionStore
from streams.projector_settings import ProjectorSettings


def test_the_command_folds_every_record_and_summary_and_writes_its_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fold.json"
    argv = ["bench", "fold", "--events", "300", "--sessions", "6", "--batch-size", "100"]
    assert main([*argv, "--json", str(path)]) == 0
    figures = json.loads(path.read_text(encoding="utf-8"))
    workload = figures["workload"]
    assert (figures["events"], workload["events"], workload["sessions"]) == (300, 300, 6)
    assert figures["requests"] > 0
    assert figures["summaries"] == figures["requests"] == workload["requests_decided"]
    assert workload["summaries_folded"] == figures["summaries"]
    # Every record of the workload and every summary made for a request is folded.
    assert figures["applied"] == 300 + figures["summaries"]
    assert figures["batches"] >= 3  # 300 records of 100, and the answers on top
    assert figures["dead_letters"] == 0
    assert 6 <= figures["snapshots"] <= 6 * figures["batches"]
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
    out = capsys.readouterr().out
    assert out.startswith(f"us_per_event {figures['us_per_event']}\n")
    assert f"gc_share {figures['gc']['share']}\n" in out
    printed = dict(line.split(maxsplit=1) for line in out.splitlines())
    assert int(printed["workload_sessions"]) == 6
    assert int(printed["workload_requests_decided"]) == figures["requests"]
    assert printed["gc_policy"] == "frozen"


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


def test_the_feed_places_records_on_their_partitions_and_answers_in_the_next_batch() -> None:
    workload = AgentsWorkload(400, 5)
    feed = OfflineFeed(workload.records(), topic="events", partitions=3, batch_size=150)
    seen: list[SourceRecord] = []
    sizes = []
    for batch in feed.batches():
        sizes.append(len(batch))
        seen.extend(batch)
    assert sizes == [150, 150, 100]
    for partition in range(3):
        offsets = [r.offset for r in seen if r.partition == partition]
        assert offsets == list(range(len(offsets)))
    assert all(r.key is not None and r.partition == session_partition(r.key, 3) for r in seen)
    assert [r.value for r in seen] == [value for _, value in AgentsWorkload(400, 5).records()]


def _reader(store: MemoryPartitionStore) -> Callable[[int, bytes], bytes | None]:
    def read(_partition: int, key: bytes) -> bytes | None:
        return store.get(key)

    return read


def _fold(
    events: int, sessions: int, batch_size: int
) -> tuple[list[CompactionRequest], Counter[str], dict[str, list[str]], int]:
    """Fold the workload as ``bench fold`` does: requests, dead letters, boundaries, summaries."""
    settings = with_workload_apps(ProjectorSettings(), [DEFAULT_PREFIX])
    partitions = settings.events_partitions
    feed = OfflineFeed(
        AgentsWorkload(events, sessions).records(),
        topic="events",
        partitions=partitions,
        batch_size=batch_size,
    )
    stores: defaultdict[int, MemoryPartitionStore] = defaultdict(MemoryPartitionStore)
    projector = BatchProjector(settings, SessionCache(10**9), partitions=partitions)
    requests: list[CompactionRequest] = []
    letters: Counter[str] = Counter()
    boundaries: defaultdict[str, list[str]] = defaultdict(list)
    summaries = 0
    for batch in feed.batches():
        summaries += sum(
            summary_request_id(decode_envelope(r.value).event) is not None for r in batch
        )
        by_partition: defaultdict[int, list[SourceRecord]] = defaultdict(list)
        for record in batch:
            by_partition[record.partition].append(record)
        decided: list[CompactionRequest] = []
        for partition, records in by_partition.items():
            store = stores[partition]
            outcome = projector.project(records, _reader(store))
            feed.complete(projector, outcome, _reader(store))
            encoded, failed = outcome.snapshot_records()
            letters.update(letter.stage for letter in [*outcome.dead_letters, *failed])
            for _, value in encoded:
                assert value is not None
                snapshot = decode_projection_snapshot(value)
                boundary = snapshot.boundary
                if boundary is not None and boundary.request_id is not None:
                    boundaries[snapshot.session_key].append(boundary.request_id)
            decided.extend(request for request, _ in outcome.requests)
            store.apply(outcome.writes, store.changelog_next + 1)
        requests.extend(decided)
        feed.answer(decided)
    return requests, letters, dict(boundaries), summaries


def test_the_agents_workload_folds_without_dead_letters_deciding_and_applying_summaries() -> None:
    requests, letters, boundaries, summaries = _fold(6_000, 40, 1_000)
    assert letters == Counter()
    triggers = Counter((r.session_key.split("/")[1], r.trigger) for r in requests)
    assert {trigger for _, trigger in triggers} == {"sliding_window", "token_threshold"}
    assert {app for app, _ in triggers} == {"support", "research", "coder", "chat"}
    # Every request got its summary on `events`, and a snapshot showed it applied.
    assert summaries == len(requests) == len({r.request_id for r in requests})
    applied = {rid for ids in boundaries.values() for rid in ids}
    assert applied == {r.request_id for r in requests}
    for key, ids in boundaries.items():
        decided = [r.request_id for r in requests if r.session_key == key]
        assert [rid for i, rid in enumerate(ids) if rid not in ids[:i]] == decided


def test_a_profile_is_written_when_asked(tmp_path: Path) -> None:
    profile = tmp_path / "fold.prof"
    argv = ["bench", "fold", "--events", "60", "--sessions", "2", "--profile", str(profile)]
    assert main(argv) == 0
    assert profile.stat().st_size > 0
