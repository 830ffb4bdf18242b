"""Fork records on the real broker, on both engines: good ones inherit, crafted ones stop nobody.

The oracle of a fork is the core's fold of what it stands for: its source's
records up to the fork's offset folded from :func:`~projections.fold.projection.inheriting`
(:func:`~projections.fold.fork.inherited`), then the fork's own records. Next to
a good fork the log holds crafted ones: a fork of another tenant's session
(dead-lettered, saying so), a cycle of two forks (both quarantined, saying
why, after the line's bound), and a fork at an offset its source never
reached (it inherits what the source has). A session of another tenant in
between folds as the core says, and so do the source and the good fork.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from projections.compaction.decision import replay_decisions
from projections.contents.snapshot import to_snapshot
from projections.fold.fork import ForkSource, fork_event, inherited
from projections.fold.projection import apply, inheriting
from schemas.envelope import Envelope
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import envelope, text_event
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    dead_letters,
    projector_settings,
    read_all,
    read_log,
    running_projector,
    wait_caught_up,
    wait_for_snapshots,
)
from tests.support.kafka import create_deployment_topics as create_topics

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 120.0
FAR = 10**12  # an offset no partition of the test reaches


def _fork(key: SessionKey, source: SessionKey, at: int) -> Envelope:
    event = fork_event(ForkSource(source, Offset(at)), event_id=f"fork-{key}", timestamp=1.0)
    return envelope(key, event)


def _exchange(key: SessionKey, number: int) -> list[Envelope]:
    inv, clock = f"inv{number}", 100.0 + 10 * number
    return [
        envelope(key, text_event(f"q{number}", inv, clock, f"question {number}")),
        envelope(key, text_event(f"a{number}", inv, clock + 1, f"answer {number}", author="bot")),
    ]


def _fork_snapshot(
    settings: ProjectorSettings,
    key: SessionKey,
    line: list[LoggedEvent],
    own: list[LoggedEvent],
) -> ProjectionSnapshot:
    """The snapshot of the fork `key` whose source's history is `line`, then its `own` records."""
    start = inheriting(settings.empty_projection_for(key))
    for record in inherited(line):
        start = apply(start, record)
    projection, _ = replay_decisions(key, own, settings.compaction_for(key), start)
    return to_snapshot(projection)


@pytest.mark.parametrize("engine", ENGINES)
async def test_forks_inherit_and_crafted_ones_stop_only_themselves(
    kafka_bootstrap: str, tmp_path: Path, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = projector_settings(
        kafka_bootstrap, unique_topic("forks"), data_dir=tmp_path, engine=engine
    )
    await create_topics(settings)
    caplog.set_level(logging.INFO, logger="streams.session_history")
    events = settings.topic("events")
    user = unique_topic("u")
    source, fork, late = (SessionKey(f"acme/support/{user}/{name}") for name in ("s", "f", "l"))
    foreign, cycle_a, cycle_b = (
        SessionKey(f"acme/support/{user}/{name}") for name in ("g", "c1", "c2")
    )
    other = SessionKey(f"tenant1/support/{user}/o")
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        placed = await append_envelopes(
            kafka_bootstrap, events, [*_exchange(source, 1), *_exchange(source, 2)]
        )
        at = placed[1].offset  # the fork keeps invocation 1
        await append_envelopes(
            kafka_bootstrap,
            events,
            [
                _fork(fork, source, at),
                *_exchange(fork, 7),
                _fork(foreign, SessionKey("globex/support/u1/s1"), 0),
                *_exchange(foreign, 1),
                _fork(cycle_a, cycle_b, FAR),
                _fork(cycle_b, cycle_a, FAR),
                *_exchange(other, 1),
                _fork(late, source, FAR),
                *_exchange(late, 9),
            ],
        )
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)

        def own(key: SessionKey) -> list[LoggedEvent]:
            return log[key][1:]  # after the fork record

        expected = {
            fork: _fork_snapshot(settings, fork, log[source][:2], own(fork)),
            late: _fork_snapshot(settings, late, log[source], own(late)),
        }
        # The refused fork record stands for nothing: the session is its other records.
        for key, records in ((source, log[source]), (other, log[other]), (foreign, own(foreign))):
            start = settings.empty_projection_for(key)
            folded, _ = replay_decisions(key, records, settings.compaction_for(key), start)
            expected[key] = to_snapshot(folded)
        await wait_for_snapshots(settings, expected, CATCH_UP_TIMEOUT_S)
    assert f"session={source} history read" in caplog.text  # the forks read their source

    # A fresh worker (empty local store) restores the fork from the checkpoint the batch
    # that folded its fork record wrote: no read of the source again.
    caplog.clear()
    fresh = settings.model_copy(update={"data_dir": tmp_path / "fresh"})
    async with running_projector(fresh, STARTUP_TIMEOUT_S):
        await append_envelopes(kafka_bootstrap, events, _exchange(fork, 8))
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        expected[fork] = _fork_snapshot(settings, fork, log[source][:2], own(fork))
        await wait_for_snapshots(settings, expected, CATCH_UP_TIMEOUT_S)
    assert "history read" not in caplog.text

    letters = dead_letters(await read_all(kafka_bootstrap, settings.topic("dead-letters")))
    by_key: dict[bytes | None, list[tuple[int, str]]] = {}
    for letter in letters:
        by_key.setdefault(letter.original_key, []).append((letter.source_offset, letter.reason))
    # The fork of another tenant's session is refused; the session's next records fold.
    [(offset, reason)] = by_key.pop(foreign.encode())
    assert offset == log[foreign][0].offset
    assert "another tenant's session" in reason
    # A cycle of forks quarantines both sessions, saying why.
    for key in (cycle_a, cycle_b):
        [(offset, reason)] = by_key.pop(key.encode())
        assert offset == log[key][0].offset
        assert "quarantined" in reason
        assert "more than 64 sessions" in reason
    assert by_key == {}  # nothing else was refused


async def test_the_faust_engine_reads_a_source_from_where_the_fork_record_says_it_starts(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The faust engine knows no session's first offset: the fork record's ``first_offset`` does.

    The source sits behind another session's records on its partition. A
    fork record naming where the source starts is read from there; an older
    one without it, from the log start (said once).
    """
    settings = projector_settings(
        kafka_bootstrap, unique_topic("fork-start"), data_dir=tmp_path, engine="faust"
    )
    await create_topics(settings)
    caplog.set_level(logging.INFO, logger="streams.session_history")
    events = settings.topic("events")
    user = unique_topic("u")
    source, hinted, old = (SessionKey(f"acme/support/{user}/{name}") for name in ("s", "h", "o"))
    home = session_partition(source.encode(), settings.events_partitions)
    filler = next(
        key
        for number in range(10_000)
        if session_partition(
            (key := SessionKey(f"{source}-f{number}")).encode(), settings.events_partitions
        )
        == home
    )
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await append_envelopes(
            kafka_bootstrap, events, [e for n in range(20) for e in _exchange(filler, n)]
        )
        placed = await append_envelopes(kafka_bootstrap, events, _exchange(source, 1))
        first, at = placed[0].offset, placed[-1].offset
        assert first >= 40  # the filler lies below the source's first record
        named = ForkSource(source, Offset(at), Offset(first))
        hint = fork_event(named, event_id=f"fork-{hinted}", timestamp=1.0)
        await append_envelopes(
            kafka_bootstrap,
            events,
            [
                envelope(hinted, hint),
                *_exchange(hinted, 7),
                _fork(old, source, at),
                *_exchange(old, 8),
            ],
        )
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        expected = {
            key: _fork_snapshot(settings, key, log[source], log[key][1:]) for key in (hinted, old)
        }
        for key in (source, filler):
            start = settings.empty_projection_for(key)
            folded, _ = replay_decisions(key, log[key], settings.compaction_for(key), start)
            expected[key] = to_snapshot(folded)
        await wait_for_snapshots(settings, expected, CATCH_UP_TIMEOUT_S)
    reads = re.findall(
        rf"session={re.escape(source)} history read: (\d+) records of offsets \[(\d+), (\d+)\)",
        caplog.text,
    )
    assert sorted(tuple(map(int, read)) for read in reads) == [(2, 0, at + 1), (2, first, at + 1)]
    assert caplog.text.count("has no first_offset (written before it existed)") == 1
