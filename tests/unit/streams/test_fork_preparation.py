"""A fork folded with its inheritance prepared off the loop commits what the inline fold commits."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.fold.fork import ForkSource, fork_event
from projections.fold.time_travel import ReadStopped
from schemas.codec import encode
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    inherit,
)
from streams.fork_preparation import ForkPreparations, paced_inheritance
from streams.projector_settings import ProjectorSettings
from streams.reads.heavy import Pacer
from streams.session_history import ReadHistory, SessionHistory, inherited_line
from tests.support.events import envelope, text_event
from tests.unit.streams.test_project_batch import Table

SETTINGS = ProjectorSettings(compaction={"compaction_interval": 4, "overlap_size": 1})
FORK = SessionKey(BENCH_SESSION.rsplit("/", 1)[0] + "/forked")
OTHER = SessionKey(BENCH_SESSION.rsplit("/", 1)[0] + "/other")
#: Where the fork's own records start on its partition (its source's are on another).
FORK_RECORD_OFFSET = 500


def _source(key: SessionKey, offset: int, record: LoggedEvent) -> SourceRecord:
    return SourceRecord("events", 0, offset, key.encode(), encode(record.envelope))


def _fork_batch(at: int, own: int) -> list[SourceRecord]:
    """The fork record of `FORK` at `at` of the source, then `own` records of its own."""
    event = fork_event(ForkSource(BENCH_SESSION, Offset(at), Offset(0)), event_id="f", timestamp=1)
    fork = LoggedEvent(Offset(FORK_RECORD_OFFSET), envelope(FORK, event))
    records = [_source(FORK, FORK_RECORD_OFFSET, fork)]
    for number in range(own):
        offset = FORK_RECORD_OFFSET + 1 + number
        logged = LoggedEvent(Offset(offset), envelope(FORK, text_event(f"own-{number}", "x", 2)))
        records.append(_source(FORK, offset, logged))
    return records


def _raw_line(at: int) -> list[SourceRecord]:
    """What a fork of the source at `at` reads back: the source's records up to `at`."""
    return [
        _source(BENCH_SESSION, record.offset, record)
        for record in bench_session(600)
        if record.offset <= at
    ]


def _line(at: int) -> list[LoggedEvent]:
    """What the inline path folds: :meth:`SessionHistory.inherited`'s answer."""
    return inherited_line(_raw_line(at))


def _outcome_fields(outcome: BatchOutcome) -> tuple[object, ...]:
    return (
        outcome.writes,
        outcome.requests,
        outcome.learned,
        outcome.answered,
        outcome.dead_letters,
        outcome.snapshot_records(),
        outcome.applied,
        outcome.redelivered,
        outcome.history_needed,
    )


def _inline(batch: list[SourceRecord], at: int) -> tuple[BatchOutcome, BatchProjector, Table]:
    """The batch folded as the inline path folds it: ``project_history`` after the read."""
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    outcome = projector.project(batch, table.read)
    needs, outcome.history_needed = outcome.history_needed, []
    assert [need.session_key for need in needs] == [FORK]
    projector.project_history(needs[0], [], table.read, outcome, inherit(SETTINGS, FORK, _line(at)))
    table.apply(outcome)
    return outcome, projector, table


def _prepared(batch: list[SourceRecord], at: int) -> tuple[BatchOutcome, BatchProjector, Table]:
    """The batch folded with the inheritance prepared in a paced thread, taken by ``complete``."""
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    outcome = projector.project(batch, table.read)

    async def complete() -> None:
        pacer, stop = Pacer(), threading.Event()
        line = _raw_line(at)
        inheritance = await asyncio.to_thread(paced_inheritance, SETTINGS, pacer, FORK, line, stop)
        taken: list[tuple[int, SessionKey, int]] = []

        def take(partition: int, key: SessionKey, offset: int) -> ReadHistory | None:
            taken.append((partition, key, offset))
            return ReadHistory(inheritance=inheritance)

        history = SessionHistory(SETTINGS)  # never reads: the prepared history is taken
        await history.complete(projector, outcome, table.read, prepared=take)
        assert taken == [(0, FORK, FORK_RECORD_OFFSET)]

    asyncio.run(complete())
    table.apply(outcome)
    return outcome, projector, table


@pytest.mark.parametrize(("at", "own"), [(0, 0), (41, 3), (377, 0), (599, 9)])
def test_a_prepared_fork_commits_the_same_as_the_inline_fold(at: int, own: int) -> None:
    batch = _fork_batch(at, own)
    inline, inline_projector, inline_table = _inline(batch, at)
    prepared, prepared_projector, prepared_table = _prepared(batch, at)
    assert inline.applied == own + 1  # the fork record and its own records folded
    assert _outcome_fields(prepared) == _outcome_fields(inline)
    assert prepared_table.values == inline_table.values
    assert prepared_projector.quarantined == inline_projector.quarantined == {}
    # And the fork goes on the same from there.
    after = _source(FORK, FORK_RECORD_OFFSET + own + 1, _next(own))
    again_inline = inline_projector.project([after], inline_table.read)
    again_prepared = prepared_projector.project([after], prepared_table.read)
    assert _outcome_fields(again_prepared) == _outcome_fields(again_inline)


def _next(own: int) -> LoggedEvent:
    offset = Offset(FORK_RECORD_OFFSET + own + 1)
    return LoggedEvent(offset, envelope(FORK, text_event("after", "x", 3)))


def test_a_refused_preparation_quarantines_the_fork_as_the_inline_refusal() -> None:
    batch = _fork_batch(41, 2)
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    outcome = projector.project(batch, table.read)
    reason = "a fork's line holds more than 64 sessions"

    def take(partition: int, key: SessionKey, offset: int) -> ReadHistory | None:
        return ReadHistory(refusal=reason)

    asyncio.run(SessionHistory(SETTINGS).complete(projector, outcome, table.read, prepared=take))
    assert [letter.stage for letter in outcome.dead_letters] == ["rebuild"] * 3
    assert projector.quarantined == {(0, FORK): f"session {FORK} quarantined: {reason}"}


def test_a_cancelled_preparation_stops_its_fold() -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(ReadStopped):
        paced_inheritance(SETTINGS, Pacer(), FORK, _raw_line(599), stop)


def test_only_a_new_forks_first_record_waits_for_a_preparation() -> None:
    preparations = ForkPreparations(SETTINGS)
    other = LoggedEvent(Offset(499), envelope(OTHER, text_event("o", "x", 1)))
    batch = [_source(OTHER, 499, other), *_fork_batch(41, 2)]
    assert preparations.first_unprepared(0, batch, Table().read) == 1
    assert preparations.first_unprepared(0, batch[:1], Table().read) is None
    # A fork record of a session with records before it in the batch inherits nothing.
    earlier = LoggedEvent(Offset(498), envelope(FORK, text_event("e", "x", 1)))
    assert (
        preparations.first_unprepared(0, [_source(FORK, 498, earlier), *batch], Table().read)
        is None
    )
    # Nor does one of a session that has applied records.
    inline_table = _inline(_fork_batch(41, 0), 41)[2]
    again = _fork_batch(41, 0)
    assert preparations.first_unprepared(0, again, inline_table.read) is None
