"""``kill -9`` of the summarizer while it dead-letters poison requests: no letter lost or doubled.

A lane writes a request's outputs (summary, or dead letter and refusal) in a
transaction with its partition's committable offset
(:mod:`summarizer_worker.partition_lane`). So:

* a dead letter committed in the same transaction as the offset past its
  request is exactly once: a kill before the commit aborts both, and the
  request is read again. Partition 1 holds poison records only; each finishes
  at once and in order, so every one of its letters is committed with its
  offset: each poison record there has exactly one committed letter.
* a *refused* request (valid, but its range does not hold the events it
  names) writes a refusal into its session with its dead letter; when read
  again after a crash, the refusal already in the session's tail drops it:
  exactly one letter too, wherever it finished.
* a dead letter that finished ahead of an earlier request still in work is
  committed before its offset (the offset moves over contiguous finished
  requests only); a crash between that commit and the offset's leaves the
  record to be read and dead-lettered again. Poison records of partition 0,
  between the good and refused requests, are in that case: *at least once,
  never lost*, and at most one letter per run that read the record.

Requests arrive in waves. The worker pauses in each transaction that holds
outputs (fault injection, logged ``stage reached stage=transaction``). Three
times it is started, handles one wave to its committed end, and is killed
inside a transaction of the next wave that holds a poison record's letter; a
last run without pauses handles the rest. The kills did land inside such
transactions: the ``read_uncommitted`` log holds more letters than the
committed one.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Final

import orjson
import pytest

from projections.event_kinds import refused_request_id
from schemas.codec import decode_envelope, encode
from schemas.compaction_request import CompactionRequest
from tests.conftest import unique_topic
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    WorkerProcess,
    answered,
    append,
    append_envelopes,
    committed_offsets,
    create_topics_for,
    dead_letters,
    invocation_events,
    planned_requests,
    read_topic,
    summaries_by_request,
    topics,
    wait_committed,
    worker_env,
)

pytestmark = pytest.mark.integration

EVENTS_PARTITIONS = 2
REQUEST_PARTITIONS = 2
GOOD_SESSIONS: Final = range(10)
REFUSED_SESSIONS: Final = range(10, 15)
KILLS = 3
WAVES = 2 * KILLS + 1  # two per killed run, the last for the finisher
POISON_PER_WAVE = 3  # on partition 1
POISON_PAUSE = "stage reached stage=transaction request= delay_s"
TRANSACTION_PAUSE_S = 0.1  # long enough that a kill sent on the log line lands inside it
STAGE_TIMEOUT_S = 60.0  # a (re)start: interpreter, group join, producers fencing predecessors
WORK_TIMEOUT_S = 120.0


def _poison(n: int) -> bytes:
    """The `n`-th record that is no compaction request (each fails to decode differently)."""
    kinds = [
        b"{not json",
        b"\xff\xfe\x00",
        orjson.dumps({"schema_version": 99, "n": n}),
        orjson.dumps({"request_id": f"p{n}"}),
        orjson.dumps([n]),
    ]
    return kinds[n % len(kinds)] + b" " * (n // len(kinds))


def _refused(request: CompactionRequest) -> CompactionRequest:
    """`request` naming an event its range does not hold: refused at stage check."""
    return request.model_copy(update={"event_ids": ("not-there", *request.event_ids[1:])})


async def test_kill_9_while_dead_lettering_loses_and_doubles_no_letter(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix, group = unique_topic("sd"), unique_topic("summarizer")
    await create_topics_for(
        kafka_bootstrap, prefix, events_partitions=EVENTS_PARTITIONS, partitions=REQUEST_PARTITIONS
    )
    names = topics(prefix)
    sessions = [*GOOD_SESSIONS, *REFUSED_SESSIONS]
    logged = await append_envelopes(
        kafka_bootstrap,
        names["events"],
        [
            envelope(session_key(s), event)
            for s in sessions
            for n in range(3)
            for event in invocation_events(s, n)
        ],
    )
    first_request = {
        s: planned_requests(
            session_key(s), [r for r in logged if r.envelope.session_key == session_key(s)]
        )[0]
        for s in sessions
    }
    good = [first_request[s] for s in GOOD_SESSIONS]
    refused = [_refused(first_request[s]) for s in REFUSED_SESSIONS]

    # Waves of requests. Partition 0: good, refused and poison requests interleaved;
    # partition 1: poison only.
    poison = iter(range(1_000))
    waves: list[list[tuple[int, bytes, bytes, str]]] = [[] for _ in range(WAVES)]
    for n, request in enumerate(good):
        wave = waves[n % WAVES]
        wave.append((0, request.session_key.encode(), encode(request), "good"))
        if n < len(refused):
            r = refused[n]
            wave.append((0, r.session_key.encode(), encode(r), "refused"))
        wave.append((0, b"poison", _poison(next(poison)), "poison"))
    for wave in waves:
        wave.extend((1, b"poison", _poison(next(poison)), "poison") for _ in range(POISON_PER_WAVE))

    requests_topic = names["compaction-requests"]
    kind_at: dict[tuple[int, int], str] = {}
    ends: dict[int, int] = {}

    async def send(wave: list[tuple[int, bytes, bytes, str]]) -> None:
        for partition in range(REQUEST_PARTITIONS):
            rows = [(key, value, kind) for p, key, value, kind in wave if p == partition]
            placed = await append(
                kafka_bootstrap, requests_topic, [(k, v) for k, v, _ in rows], partition=partition
            )
            kind_at.update(zip(placed, (kind for _, _, kind in rows), strict=True))
            ends[partition] = max(offset + 1 for _, offset in placed)

    env = worker_env(kafka_bootstrap, prefix, group, CTXSTREAM_SUMMARIZER_INSTANCE_ID="dl")
    worker = WorkerProcess(
        {
            **env,
            "CTXSTREAM_SUMMARIZER_STAGE_DELAY_S": json.dumps({"transaction": TRANSACTION_PAUSE_S}),
        },
        tmp_path / "worker.log",
    )
    pending = iter(waves)
    for _ in range(KILLS):
        await worker.start()
        # One wave handled and committed (with what the previous run left) ...
        await send(next(pending))
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, worker.log_since_start()[-3000:]
        # ... then the next killed inside a transaction holding a poison record's letter
        # (its request id is empty in the pause's log line).
        seen = worker.log_since_start().count(POISON_PAUSE)
        await send(next(pending))
        reached = await worker.wait_for(POISON_PAUSE, STAGE_TIMEOUT_S, count=seen + 1)
        assert reached, worker.log_since_start()[-3000:]
        await worker.kill()
    # The dead worker's commits are final: it stopped short of its last wave.
    after_kills = await committed_offsets(kafka_bootstrap, group)
    assert any(after_kills.get(p, 0) < end for p, end in ends.items()), (after_kills, ends)

    finisher = WorkerProcess(env, tmp_path / "finisher.log")
    await finisher.start()
    try:
        for wave in pending:
            await send(wave)
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, finisher.log_since_start()[-3000:]
    finally:
        assert await finisher.stop() == 0
    bad = {at for at, kind in kind_at.items() if kind != "good"}

    # Everything is committed and both workers are gone: the topics are final.
    letters = dead_letters(
        await read_topic(
            kafka_bootstrap,
            names["dead-letters"],
            partitions=REQUEST_PARTITIONS,
            until=lambda records: len(records) >= len(bad),
            timeout_s=WORK_TIMEOUT_S,
        )
    )
    assert {d.source_topic for d in letters} == {requests_topic}
    count = Counter((d.source_partition, d.source_offset) for d in letters)
    assert set(count) == bad  # none lost, and none for a good request
    exactly_once = {at for at in bad if at[0] == 1 or kind_at[at] == "refused"}
    at_least_once = bad - exactly_once
    assert {at: count[at] for at in exactly_once} == dict.fromkeys(exactly_once, 1)
    # One extra letter at most per crashed run that had reached the record.
    assert all(1 <= count[at] <= 1 + KILLS for at in at_least_once)

    events = await read_topic(
        kafka_bootstrap,
        names["events"],
        partitions=EVENTS_PARTITIONS,
        until=answered(r.request_id for r in good),
        timeout_s=WORK_TIMEOUT_S,
    )
    summaries = summaries_by_request(events)
    assert {rid: len(found) for rid, found in summaries.items()} == {r.request_id: 1 for r in good}
    refusals = Counter(refused_request_id(decode_envelope(record.value).event) for record in events)
    del refusals[None]
    assert refusals == Counter(r.request_id for r in refused)

    uncommitted = dead_letters(
        await read_topic(
            kafka_bootstrap,
            names["dead-letters"],
            partitions=REQUEST_PARTITIONS,
            until=lambda records: len(records) > len(letters),
            timeout_s=WORK_TIMEOUT_S,
            isolation_level="read_uncommitted",
        )
    )
    assert len(uncommitted) > len(letters)  # the kills aborted transactions holding letters
