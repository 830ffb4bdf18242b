"""``kill -9`` of the projector while it dead-letters poison records: none lost, and exactly one
letter for each record read only once.

The projector is at least once, made exact by offsets (:mod:`streams.faust_engine.projector`):
faust commits a record's offset only after every output of the records before
it (dead letters included) was acknowledged by the broker, and a restart
reads again from the committed offset. Its dead-letter producer is not
transactional, and a redelivered bad record is dead-lettered again (the
session's ``last_offset`` skips redelivered events, but a bad record never
reaches a session). So, for each poison record, with C the partition's
offset committed when the worker died (final: the dead worker commits no
more):

* a record read once is dead-lettered once;
* a record is read again, and dead-lettered again, in two cases only: at or
  above C, after the restart (the killed run may have written its letter
  already); and in a range that a run sought back over because faust's
  committed offset stayed below what the projector had folded (records faust
  skipped and never acked; :mod:`streams.faust_engine.partition_positions`), which the
  worker logs (``committed offset stays at <c> below the fold at <f>:
  seeking back``).

So every poison record outside those ranges has exactly one letter, and
every poison record in them has *at least one: never lost*.

The native engine writes a batch's letters in the transaction that commits
the offsets past them (:mod:`streams.native_engine.engine`): a ``read_committed``
reader finds exactly one letter for every poison record, read again or not.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from pathlib import Path

import pytest

from schemas.codec import decode_dead_letter, encode
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    append,
    committed_offsets,
    create_deployment_topics,
    end_offsets,
    projector_settings,
    read_all,
    scripted_sessions,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for,
)

pytestmark = pytest.mark.integration

SESSIONS = 60
INVOCATIONS = 30  # 7,200 events: the worker is still folding when a letter is committed
POISON_EVERY = 20  # a bad record after every 20 good ones, under a session's key
FIRST_COMMIT_TIMEOUT_S = 90.0  # a worker subprocess starts, joins, folds its first batches
CATCH_UP_TIMEOUT_S = 180.0
_SOUGHT_BACK = re.compile(
    r"partition=(\d+) committed offset stays at (\d+) below the fold at (\d+): seeking back"
)


@pytest.mark.parametrize("engine", ENGINES)
async def test_kill_9_while_dead_lettering_loses_no_letter(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        data_dir=tmp_path / "data",
        batch_size=100,
        engine=engine,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    records: list[tuple[bytes | None, bytes]] = []
    for n, env in enumerate(scripted_sessions(SESSIONS, INVOCATIONS)):
        key = env.session_key.encode()
        records.append((key, encode(env)))
        if n % POISON_EVERY == POISON_EVERY - 1:
            records.append((key, b"{poison %d" % n))
    await append(kafka_bootstrap, events, records)
    ends = await end_offsets(kafka_bootstrap, events)
    letters_topic = settings.topic("dead-letters")

    worker = start_worker(settings, tmp_path / "worker-1.log")
    try:

        async def letters_committed() -> bool:
            # A commit past at least one dead-lettered record on some partition.
            committed = await committed_offsets(kafka_bootstrap, settings.app_id, events)
            letters = [
                decode_dead_letter(r.value) for r in await read_all(kafka_bootstrap, letters_topic)
            ]
            return any(d.source_offset < committed.get(d.source_partition, 0) for d in letters)

        await wait_for("a commit past a dead letter", letters_committed, FIRST_COMMIT_TIMEOUT_S)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    finally:
        stop_worker(worker)
    at_kill = await committed_offsets(kafka_bootstrap, settings.app_id, events)
    assert sum(at_kill.values()) < sum(ends.values()), "the worker finished before it was killed"

    worker = start_worker(settings, tmp_path / "worker-2.log")
    try:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
    finally:
        stop_worker(worker)
    assert worker.returncode == 0

    # Every event's offset is committed: every letter was acknowledged before that.
    letters = [decode_dead_letter(r.value) for r in await read_all(kafka_bootstrap, letters_topic)]
    assert {d.source_topic for d in letters} == {events}
    assert {d.stage for d in letters} == {"decode"}
    count = Counter((d.source_partition, d.source_offset) for d in letters)
    poison = {
        (r.partition, r.offset)
        for r in await read_all(kafka_bootstrap, events)
        if r.value.startswith(b"{poison")
    }
    assert len(poison) == len(records) // (POISON_EVERY + 1)
    assert set(count) <= poison  # no letter for a good record
    sought_back = [
        (int(partition), int(committed), int(fold))
        for log in ("worker-1.log", "worker-2.log")
        for partition, committed, fold in _SOUGHT_BACK.findall((tmp_path / log).read_text())
    ]

    def read_again(at: tuple[int, int]) -> bool:
        partition, offset = at
        return offset >= at_kill.get(partition, 0) or any(
            p == partition and committed <= offset <= fold for p, committed, fold in sought_back
        )

    once = {at for at in poison if not read_again(at)}
    again = poison - once
    assert once, (at_kill, sought_back)  # the kill came after letters were committed ...
    assert again, at_kill  # ... and before the last ones
    assert {at: count[at] for at in once} == dict.fromkeys(once, 1)
    assert again <= set(count)  # at least once, never lost
    if engine == "native":
        assert dict(count) == dict.fromkeys(poison, 1)  # exactly once
