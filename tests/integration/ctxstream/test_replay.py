"""``Client.replay``, ``SyncClient.replay`` and ``ctxstream replay`` on a live pipeline's log.

The module's live deployment is run once (:func:`_run_live`): the native
projector and the summarizer worker over sessions of two tenants, with
compaction firing on both triggers and every request summarized, plus one
record that is no envelope; then both stop. Each test replays that log into
a namespace of its own and compares what the replay wrote with the live
projections and with the core's fold of each session's log (the oracle), and
checks that nothing live moved: every live topic's end offsets and the live
group's committed offsets are what they were.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from ctxstream import (
    BrokerUnavailableError,
    Client,
    InvalidArgumentError,
    ReplayProgress,
    SyncClient,
    TopicMissingError,
)
from projections.event_kinds import summary_request_id
from schemas.codec import decode_dead_letter
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.native_engine.changelog import changelog_topic
from streams.projector_settings import ProjectorSettings
from tests.conftest import REPO, free_ports, unique_topic
from tests.support.kafka import (
    WorkerProcess,
    append,
    clean_fold,
    committed_offsets,
    create_deployment_topics,
    end_offsets,
    expected_snapshots,
    invocation_rows,
    latest_snapshots,
    projector_settings,
    read_all,
    read_log,
    requests_on,
    running_projector,
    settings_env,
    wait_caught_up,
    wait_for,
    wait_for_snapshots,
    worker_env,
)

pytestmark = pytest.mark.integration

TENANTS: Final = ("acme", "globex")
SESSIONS_PER_TENANT: Final = 3
INVOCATIONS: Final = 7
STARTUP_TIMEOUT_S: Final = 60.0  # joining the group, creating the changelog
SETTLE_TIMEOUT_S: Final = 120.0  # folding, summarizing every request, folding the summaries
CLI_TIMEOUT_S: Final = 120.0  # a replay as a child process, its imports included
LIVE_ROLES: Final = (
    "events",
    "compaction-requests",
    "projections",
    "dead-letters",
    "partition-owners",
)


@dataclass(frozen=True)
class Live:
    """What the live pipeline left, and where it stood when it stopped."""

    settings: ProjectorSettings
    started_s: float
    """A time before the first record of the log."""
    log: dict[SessionKey, list[LoggedEvent]]
    latest: dict[SessionKey, ProjectionSnapshot]
    """Each session's last snapshot on the live `projections` topic."""
    requests: frozenset[str]
    """The request ids on the live `compaction-requests` topic."""
    dead_letter_offsets: frozenset[tuple[int, int]]
    """The source (partition, offset) of each live dead letter."""
    marks: dict[str, dict[int, int]]
    """Every live topic's end offsets, and the group's committed offsets (``group``)."""

    @property
    def keys(self) -> list[SessionKey]:
        """Every session, in order."""
        return sorted(self.log)


def _session_keys() -> list[SessionKey]:
    return [
        SessionKey(f"{tenant}/support/u{n}/s{n}")
        for tenant in TENANTS
        for n in range(SESSIONS_PER_TENANT)
    ]


async def _marks(settings: ProjectorSettings) -> dict[str, dict[int, int]]:
    """The end offsets of every live topic and the live group's committed offsets."""
    bootstrap = settings.kafka_bootstrap
    topics = [settings.topic(role) for role in LIVE_ROLES] + [changelog_topic(settings)]
    marks = {topic: await end_offsets(bootstrap, topic) for topic in topics}
    marks["group"] = await committed_offsets(bootstrap, settings.app_id)
    return marks


async def _run_live(bootstrap: str, folder: Path) -> Live:
    """The live pipeline over the module's sessions, until every request is summarized."""
    settings = projector_settings(bootstrap, unique_topic("replay-live"), data_dir=folder)
    await create_deployment_topics(settings)
    events = settings.topic("events")
    requests_topic = settings.topic("compaction-requests")
    summarizer = WorkerProcess(
        worker_env(bootstrap, settings.topic_prefix, unique_topic("replay-summarizer")),
        folder / "summarizer.log",
    )
    started_s = time.time()
    await summarizer.start()
    try:
        async with running_projector(settings, STARTUP_TIMEOUT_S), Client(settings=settings) as c:
            keys = _session_keys()
            for invocation in range(1, INVOCATIONS + 1):
                for index, key in enumerate(keys):
                    tokens = 1_000 + invocation * 300 * (1 + index % 3)  # some pass 5,000
                    clock = 1_000.0 + invocation * 10
                    await c.append_many(
                        key, invocation_rows(index, invocation, clock, prompt_tokens=tokens)
                    )
            # A record that is no envelope: a dead letter, live and replayed.
            await append(bootstrap, events, [(keys[0].encode(), b"not an envelope")])

            async def summarized() -> bool:
                emitted = {r.request_id for r in await requests_on(bootstrap, requests_topic)}
                log = await read_log(bootstrap, events)
                answered = {
                    summary_request_id(record.envelope.event)
                    for records in log.values()
                    for record in records
                }
                return bool(emitted) and emitted <= answered

            await wait_for("a summary of every request", summarized, SETTLE_TIMEOUT_S)
            await wait_caught_up(settings, SETTLE_TIMEOUT_S)
            log = await read_log(bootstrap, events)
            await wait_for_snapshots(
                settings, expected_snapshots(clean_fold(settings, log)), SETTLE_TIMEOUT_S
            )
    finally:
        await summarizer.stop()
    letters = [
        decode_dead_letter(r.value)
        for r in await read_all(bootstrap, settings.topic("dead-letters"))
    ]
    return Live(
        settings=settings,
        started_s=started_s,
        log=log,
        latest=await latest_snapshots(bootstrap, settings.topic("projections")),
        requests=frozenset(r.request_id for r in await requests_on(bootstrap, requests_topic)),
        dead_letter_offsets=frozenset((d.source_partition, d.source_offset) for d in letters),
        marks=await _marks(settings),
    )


@pytest.fixture(scope="module")
def live(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Live:
    """The module's live deployment, stopped (see the module's docstring)."""
    return asyncio.run(_run_live(kafka_bootstrap, tmp_path_factory.mktemp("replay")))


def _folded_from(live: Live, offset: int) -> dict[SessionKey, ProjectionSnapshot]:
    """The oracle: each session's records at or after `offset` folded by the core from scratch."""
    log = {
        key: kept
        for key, records in live.log.items()
        if (kept := [record for record in records if record.offset >= offset])
    }
    return expected_snapshots(clean_fold(live.settings, log))


def _only(
    snapshots: Mapping[SessionKey, ProjectionSnapshot], keys: Iterable[str]
) -> dict[SessionKey, ProjectionSnapshot]:
    wanted = set(keys)
    return {key: snapshot for key, snapshot in snapshots.items() if key in wanted}


async def _replayed(live: Live, target: str) -> dict[SessionKey, ProjectionSnapshot]:
    return await latest_snapshots(live.settings.kafka_bootstrap, f"{target}.projections")


async def test_a_replay_from_the_beginning_equals_the_live_projections(live: Live) -> None:
    bootstrap = live.settings.kafka_bootstrap
    assert {s.tenant for s in live.latest.values()} == set(TENANTS)
    assert any(s.boundary is not None for s in live.latest.values()), "nothing was summarized"
    assert live.dead_letter_offsets, "the live projector wrote no dead letter"
    target = unique_topic("replayed")
    seen: list[ReplayProgress] = []

    report = await Client(settings=live.settings).replay(target, progress=seen.append)

    replayed = await _replayed(live, target)
    assert replayed == live.latest
    assert replayed == _folded_from(live, 0)
    letters = [
        decode_dead_letter(r.value) for r in await read_all(bootstrap, f"{target}.dead-letters")
    ]
    assert {(d.source_partition, d.source_offset) for d in letters} == live.dead_letter_offsets
    requests = await requests_on(bootstrap, f"{target}.compaction-requests")
    assert {r.request_id for r in requests} == live.requests
    events_ends = live.marks[live.settings.topic("events")]
    assert report.sessions == len(live.log)
    assert report.records == sum(len(records) for records in live.log.values())
    assert report.offsets == sum(events_ends.values())
    assert report.dead_letters == len(letters)
    assert report.requests == len(requests)
    assert report.target_prefix == target
    # Progress starts at 0 and reaches its total, every partition at its end offset.
    assert seen[0].done == 0
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert seen[-1].done == seen[-1].total == report.offsets
    assert {n: p.position for n, p in seen[-1].partitions.items()} == events_ends
    # Nothing live moved: no topic was written, no offset committed.
    assert await _marks(live.settings) == live.marks


async def test_sessions_limit_the_replay_to_those_sessions(live: Live) -> None:
    chosen = [live.keys[0], live.keys[-1]]  # one of each tenant
    target = unique_topic("replayed")
    seen: list[ReplayProgress] = []

    report = await Client(settings=live.settings).replay(
        target, sessions=chosen, progress=seen.append
    )

    assert await _replayed(live, target) == _only(live.latest, chosen)
    assert report.sessions == 2
    assert report.records == sum(len(live.log[key]) for key in chosen)
    homes = {session_partition(key.encode(), live.settings.events_partitions) for key in chosen}
    assert set(seen[-1].partitions) == homes  # only their partitions were read
    assert seen[-1].done == seen[-1].total
    assert await _marks(live.settings) == live.marks


async def test_from_an_offset_each_session_is_folded_from_the_records_read(live: Live) -> None:
    offsets = sorted(record.offset for records in live.log.values() for record in records)
    start = offsets[len(offsets) // 2]
    target = unique_topic("replayed")

    await Client(settings=live.settings).replay(target, from_offset=start)

    expected = _folded_from(live, start)
    assert expected != _only(live.latest, expected), "the offset changed no session"
    assert await _replayed(live, target) == expected


async def test_from_a_time_reads_the_records_written_since(live: Live) -> None:
    client = Client(settings=live.settings)
    whole, late = unique_topic("replayed"), unique_topic("replayed")

    await client.replay(whole, from_time=live.started_s)
    report = await client.replay(late, from_time=time.time() + 3_600)

    assert await _replayed(live, whole) == live.latest
    assert (report.sessions, report.records, report.offsets) == (0, 0, 0)
    assert await _replayed(live, late) == {}


def test_the_sync_client_replays_the_same(live: Live) -> None:
    target = unique_topic("replayed")
    chosen = [live.keys[1]]

    with SyncClient(settings=live.settings) as client:
        report = client.replay(target, sessions=chosen)

    assert report.sessions == 1
    assert asyncio.run(_replayed(live, target)) == _only(live.latest, chosen)


async def test_refused_arguments_name_themselves_and_nothing_is_written(live: Live) -> None:
    client = Client(settings=live.settings)
    refusals = {
        r"^target_prefix: .* is the live deployment's own prefix": {
            "target_prefix": live.settings.topic_prefix
        },
        r"^target_prefix: 'a/b' is not a topic prefix": {"target_prefix": "a/b"},
        r"^sessions\[1\]: ": {"target_prefix": "elsewhere", "sessions": [live.keys[0], "x/y"]},
        r"^from_offset, from_time: give one": {
            "target_prefix": "elsewhere",
            "from_offset": 0,
            "from_time": 1.0,
        },
        r"^from_offset: -1 is negative": {"target_prefix": "elsewhere", "from_offset": -1},
    }
    for pattern, arguments in refusals.items():
        with pytest.raises(InvalidArgumentError, match=pattern):
            await client.replay(**arguments)  # type: ignore[arg-type] # a mapping of arguments
    assert await _marks(live.settings) == live.marks


async def test_a_missing_events_topic_and_an_unreachable_broker_say_so(
    kafka_bootstrap: str,
) -> None:
    absent = Client(bootstrap=kafka_bootstrap, topic_prefix=unique_topic("absent"))
    with pytest.raises(TopicMissingError, match=r"absent-[0-9a-f]+\.events' does not exist"):
        await absent.replay(unique_topic("replayed"))

    (port,) = free_ports(1)
    unreachable = Client(bootstrap=f"127.0.0.1:{port}")
    with pytest.raises(BrokerUnavailableError, match=f"127.0.0.1:{port} unavailable"):
        await unreachable.replay("elsewhere", connect_timeout_s=5.0)


@dataclass(frozen=True)
class Finished:
    """A command's exit status and output, as written (a carriage return stays one)."""

    returncode: int
    stdout: str
    stderr: str


def _command(env: Mapping[str, str], *arguments: str) -> Finished:
    done = subprocess.run(
        [sys.executable, "-m", "ctxstream", "replay", *arguments],
        env={**os.environ, **env},
        cwd=REPO,
        capture_output=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    return Finished(done.returncode, done.stdout.decode(), done.stderr.decode())


def test_the_command_writes_its_progress_once_off_a_terminal_and_ends_with_a_summary(
    live: Live,
) -> None:
    target = unique_topic("replayed")
    records = sum(len(records) for records in live.log.values())

    done = _command(settings_env(live.settings), target)

    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"replayed {len(live.log)} sessions, {records} records into "
        rf"{re.escape(target)}\.projections in \d+\.\d\d s \(.*\)\n",
        done.stdout,
    ), done.stdout
    total = sum(live.marks[live.settings.topic("events")].values())
    assert "\r" not in done.stderr  # a pipe, not a terminal: no bar drawn in place
    assert done.stderr.endswith(f"] 100%  {total}/{total} offsets\n"), done.stderr[-200:]
    assert asyncio.run(_replayed(live, target)) == live.latest


@pytest.mark.parametrize(
    ("case", "status", "message"),
    [
        ("bad-prefix", 2, r"target_prefix: 'no/slash' is not a topic prefix"),
        ("no-events", 1, r"topic '.*\.events' does not exist"),
        ("no-broker", 1, r"broker 127\.0\.0\.1:\d+ unavailable"),
    ],
)
def test_each_command_error_is_one_line_and_a_non_zero_exit(
    live: Live, case: str, status: int, message: str
) -> None:
    env = settings_env(live.settings)
    target = "no/slash" if case == "bad-prefix" else unique_topic("replayed")
    if case == "no-events":
        env["CTXSTREAM_TOPIC_PREFIX"] = unique_topic("absent")
    if case == "no-broker":
        env["CTXSTREAM_KAFKA_BOOTSTRAP"] = f"127.0.0.1:{free_ports(1)[0]}"

    done = _command(env, target)

    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    assert re.fullmatch(rf"ctxstream replay: {message}.*\n", done.stderr), done.stderr
