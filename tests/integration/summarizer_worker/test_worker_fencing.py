"""A summarizer paused inside its transactions while another takes over, then resumed.

The first worker pauses inside the open transaction of each of its two
request partitions (fault injection: ``CTXSTREAM_SUMMARIZER_STAGE_DELAY_S``,
logged ``stage reached``): partition 0's holds a summary, partition 1's the
dead letter and the refusal of a request whose events the log does not hold.
It is then stopped with SIGSTOP there. A second worker of the same group takes
both partitions over once the first one's session has timed out; its lanes'
producers, with the same transactional ids, fence the first worker's and the
broker aborts its open transactions. The second worker answers every request,
the paused ones and those appended while the first was stopped. The first
worker is then resumed with SIGCONT and finishes its transactions: their
commit fails, it exits with status 1, and a ``read_committed`` reader of
`events` and `dead-letters` sees exactly one summary per request, one dead
letter and one refusal for the bad request, all from the second worker,
while a ``read_uncommitted`` reader shows that the first worker did write
them before it was stopped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aiokafka.structs import ConsumerRecord

from projections.event_kinds import refused_request_id
from schemas.codec import decode_envelope
from schemas.compaction_request import CompactionRequest
from schemas.logged_event import LoggedEvent
from tests.conftest import unique_topic
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    WorkerProcess,
    answered,
    append_envelopes,
    append_requests,
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
SESSIONS = 6
# Long enough to stop the worker inside the pause however slow the machine is. The
# monotonic clock runs on while a process is stopped, so after SIGCONT the worker sleeps
# what is left of it: usually something (the successor is often done within it), and the
# worker then learns first that it lost its partitions (its heartbeat is refused), closes
# its lanes, and the commit that ends the pause fails inside that close; when nothing is
# left, the commit fails first. Either way it must exit with status 1.
TRANSACTION_PAUSE_S = 20.0
STAGE_TIMEOUT_S = 60.0  # a worker starts, joins the group, opens its lanes
WORK_TIMEOUT_S = 120.0  # the first worker's session times out, the second joins and works
EXIT_TIMEOUT_S = 120.0  # the resumed worker ends its pause, fails its commit and stops
_STAGE_LINE = re.compile(r"stage reached stage=transaction request=(\S*)")


def _refusals(records: list[ConsumerRecord]) -> list[tuple[str, str]]:
    """(request id, producer id) of every refusal event among `events` records."""
    found = []
    for record in records:
        env = decode_envelope(record.value)
        refused = refused_request_id(env.event)
        if refused is not None:
            found.append((refused, env.producer_id))
    return found


def _requests_by_session(
    logged_by_session: dict[int, list[LoggedEvent]],
) -> dict[int, CompactionRequest]:
    return {s: planned_requests(session_key(s), log)[0] for s, log in logged_by_session.items()}


async def test_a_paused_worker_resumed_after_a_takeover_commits_nothing(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix, group = unique_topic("sz"), unique_topic("summarizer")
    await create_topics_for(
        kafka_bootstrap, prefix, events_partitions=EVENTS_PARTITIONS, partitions=REQUEST_PARTITIONS
    )
    names = topics(prefix)
    logged = await append_envelopes(
        kafka_bootstrap,
        names["events"],
        [
            envelope(session_key(s), event)
            for s in range(SESSIONS)
            for n in range(3)
            for event in invocation_events(s, n)
        ],
    )
    request = _requests_by_session(
        {
            s: [r for r in logged if r.envelope.session_key == session_key(s)]
            for s in range(SESSIONS)
        }
    )
    # Session 1's request names an event its range does not hold: refused at stage check.
    mismatched = request[1].model_copy(
        update={"event_ids": ("not-there", *request[1].event_ids[1:])}
    )
    requests_topic = names["compaction-requests"]
    # Before the first worker starts: one request per partition, so that each lane's first
    # transaction holds exactly that request's outputs.
    (first_summary_at,) = await append_requests(
        kafka_bootstrap, requests_topic, [request[0]], partition=0
    )
    (refused_at,) = await append_requests(
        kafka_bootstrap, requests_topic, [mismatched], partition=1
    )
    assert (first_summary_at[0], refused_at[0]) == (0, 1)

    base = worker_env(
        kafka_bootstrap, prefix, group, CTXSTREAM_SUMMARIZER_SESSION_TIMEOUT_MS="6000"
    )
    paused = WorkerProcess(
        {
            **base,
            "CTXSTREAM_SUMMARIZER_INSTANCE_ID": "paused",
            "CTXSTREAM_LOG_LEVEL": "DEBUG",
            "CTXSTREAM_SUMMARIZER_STAGE_DELAY_S": json.dumps({"transaction": TRANSACTION_PAUSE_S}),
        },
        tmp_path / "paused.log",
        command=("summarizer_worker",),
    )
    successor = WorkerProcess(
        {**base, "CTXSTREAM_SUMMARIZER_INSTANCE_ID": "successor"}, tmp_path / "successor.log"
    )
    await paused.start()
    try:
        reached = await paused.wait_for("stage reached stage=transaction", STAGE_TIMEOUT_S, count=2)
        assert reached, paused.log_since_start()[-3000:]
        paused.pause()
        in_transaction = sorted(_STAGE_LINE.findall(paused.log_since_start()))
        assert in_transaction == sorted([request[0].request_id, mismatched.request_id])

        # While it is stopped: more requests in both partitions, one a duplicate.
        later = await append_requests(
            kafka_bootstrap, requests_topic, [request[2], request[3], request[0]], partition=0
        )
        later += await append_requests(
            kafka_bootstrap, requests_topic, [request[4], request[5]], partition=1
        )
        ends = dict.fromkeys(range(REQUEST_PARTITIONS), 0)
        for partition, offset in [first_summary_at, refused_at, *later]:
            ends[partition] = max(ends[partition], offset + 1)
        valid = [request[s].request_id for s in (0, 2, 3, 4, 5)]

        await successor.start()
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, successor.log_since_start()[-3000:]
        await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=EVENTS_PARTITIONS,
            until=answered(valid),
            timeout_s=WORK_TIMEOUT_S,
        )

        paused.resume()
        status = await paused.exited(EXIT_TIMEOUT_S)
        paused_log = paused.log_since_start()
    finally:
        if paused.process is not None and paused.process.returncode is None:
            paused.resume()
            await paused.stop()
        successor_status = await successor.stop()
    assert successor_status == 0, successor.log_since_start()[-3000:]
    assert status == 1, paused_log[-3000:]
    # The broker refused the resumed worker's commit: its producer epoch is older than
    # the successor's (INVALID_PRODUCER_EPOCH, which aiokafka raises as ProducerFenced).
    assert "ProducerFenced" in paused_log, paused_log[-3000:]
    assert "summarizer failed; exiting with status 1" in paused_log, paused_log[-3000:]

    # Both workers are gone: what is in the topics now is final.
    paused_id, successor_id = f"{group}/paused", f"{group}/successor"
    committed_events = await read_topic(
        kafka_bootstrap,
        names["events"],
        partitions=EVENTS_PARTITIONS,
        until=answered(valid),
        timeout_s=WORK_TIMEOUT_S,
    )
    summaries = summaries_by_request(committed_events)
    assert sorted(summaries) == sorted(valid)
    assert {rid: [s.envelope.producer_id for s in found] for rid, found in summaries.items()} == {
        rid: [successor_id] for rid in valid
    }
    assert _refusals(committed_events) == [(mismatched.request_id, successor_id)]

    letters_topic = names["dead-letters"]
    letters_partitions = REQUEST_PARTITIONS
    committed_letters = dead_letters(
        await read_topic(
            kafka_bootstrap,
            letters_topic,
            partitions=letters_partitions,
            until=lambda records: len(records) >= 1,
            timeout_s=WORK_TIMEOUT_S,
        )
    )
    assert [(d.source_topic, d.source_partition, d.source_offset) for d in committed_letters] == [
        (requests_topic, *refused_at)
    ]

    # The paused worker did write its summary, dead letter and refusal: uncommitted.
    paused_wrote = await read_topic(
        kafka_bootstrap,
        names["events"],
        partitions=EVENTS_PARTITIONS,
        until=lambda records: any(
            decode_envelope(r.value).producer_id == paused_id for r in records
        ),
        timeout_s=WORK_TIMEOUT_S,
        isolation_level="read_uncommitted",
    )
    written = summaries_by_request(paused_wrote)
    assert [s.envelope.producer_id for s in written[request[0].request_id]] == [
        paused_id,
        successor_id,
    ]
    assert sorted(_refusals(paused_wrote)) == sorted(
        [(mismatched.request_id, paused_id), (mismatched.request_id, successor_id)]
    )
    all_letters = dead_letters(
        await read_topic(
            kafka_bootstrap,
            letters_topic,
            partitions=letters_partitions,
            until=lambda records: len(records) >= 2,
            timeout_s=WORK_TIMEOUT_S,
            isolation_level="read_uncommitted",
        )
    )
    assert [(d.source_partition, d.source_offset) for d in all_letters] == [refused_at] * 2
