"""The summarizer worker (``ctxstream summarizer``) against the real broker, on its own.

Sessions are appended to `events`, the requests a projector would decide over
them to `compaction-requests`, and the worker runs as a child process. Every
request ends with exactly one summary event of ADK's shape in its session,
duplicates and stale requests are skipped, bad requests are dead-lettered,
and the consumer group commits every request.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from projections.compaction.summary_request import with_summary_request_id
from projections.event_kinds import refused_request_id
from schemas.codec import decode_envelope, encode
from schemas.compaction_request import CompactionRequest, compaction_request_id
from schemas.event import Event
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from summarizer_worker.extractive import extractive_summary
from tests.conftest import unique_topic
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    WorkerProcess,
    answered,
    append,
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

EVENTS_PARTITIONS = 4
REQUEST_PARTITIONS = 2
SESSIONS = 8
INVOCATIONS = 7  # two sliding windows per session: inv0-2, then inv2-5
WORK_TIMEOUT_S = 90.0  # a cold broker, a worker start and a few hundred records


def _rewind(key_index: int, target: str, timestamp: float) -> Event:
    return Event.model_validate(
        {
            "id": f"s{key_index}-rewind",
            "invocationId": f"s{key_index}-rw",
            "author": "user",
            "timestamp": timestamp,
            "actions": {"rewindBeforeInvocationId": target},
        }
    )


def _covering_summary(request: CompactionRequest) -> Event:
    # Appended by an earlier run for a wider window of the same session.
    return with_summary_request_id(
        Event.model_validate(
            {
                "id": "older-summary",
                "invocationId": "older-summary",
                "author": "user",
                "timestamp": request.end_timestamp + 100,
                "actions": {
                    "compaction": {
                        "startTimestamp": request.start_timestamp - 1,
                        "endTimestamp": request.end_timestamp,
                        "compactedContent": {"role": "model", "parts": [{"text": "older"}]},
                    }
                },
            }
        ),
        "an-older-request",
    )


async def test_every_request_gets_one_summary_and_bad_ones_are_dead_lettered(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix, group = unique_topic("sw"), unique_topic("summarizer")
    await create_topics_for(
        kafka_bootstrap, prefix, events_partitions=EVENTS_PARTITIONS, partitions=REQUEST_PARTITIONS
    )
    names = topics(prefix)
    rewound_index, covered_index = SESSIONS, SESSIONS + 1
    # Interleaved as live traffic: invocation n of every session, then n + 1.
    envelopes = [
        envelope(session_key(s), event)
        for n in range(INVOCATIONS)
        for s in range(SESSIONS + 2)
        for event in invocation_events(s, n)
    ]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    by_session: dict[int, list[LoggedEvent]] = {
        s: [r for r in logged if r.envelope.session_key == session_key(s)]
        for s in range(SESSIONS + 2)
    }
    planned = {s: planned_requests(session_key(s), by_session[s]) for s in by_session}
    valid = [request for s in range(SESSIONS) for request in planned[s]]
    # Stale: a rewind into its range, a summary already covering it.
    rewound, covered = planned[rewound_index][0], planned[covered_index][0]
    await append_envelopes(
        kafka_bootstrap,
        names["events"],
        [
            envelope(
                session_key(rewound_index), _rewind(rewound_index, f"s{rewound_index}-inv1", 9e9)
            ),
            envelope(session_key(covered_index), _covering_summary(covered)),
        ],
    )
    mismatched = valid[0].model_copy(
        update={
            "event_ids": ("not-there", *valid[0].event_ids[1:]),
            "request_id": "mismatched-ids",
        }
    )
    future = valid[1].model_copy(
        update={
            "event_offsets": (Offset(10**9),),
            "event_ids": ("e",),
            "request_id": compaction_request_id(
                valid[1].session_key, "sliding_window", (Offset(10**9),)
            ),
        }
    )
    retried = [r.model_copy(update={"attempt": 2}) for r in valid[:3]]
    requests = [*valid, *valid, rewound, covered, mismatched, future, *retried]
    placed = await append_requests(kafka_bootstrap, names["compaction-requests"], requests)
    garbage = (await append(kafka_bootstrap, names["compaction-requests"], [(b"k", b"not json")]))[
        0
    ]
    ends = dict.fromkeys(range(REQUEST_PARTITIONS), 0)
    for partition, offset in [*placed, garbage]:
        ends[partition] = max(ends[partition], offset + 1)

    worker = WorkerProcess(
        worker_env(kafka_bootstrap, prefix, group, CTXSTREAM_SUMMARIZER_RANGE_WAIT_S="2"),
        tmp_path / "worker.log",
    )
    await worker.start()
    try:
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, worker.log_since_start()[-3000:]
        records = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=EVENTS_PARTITIONS,
            until=answered(r.request_id for r in valid),
            timeout_s=WORK_TIMEOUT_S,
        )
        letters = dead_letters(
            await read_topic(
                kafka_bootstrap,
                names["dead-letters"],
                partitions=REQUEST_PARTITIONS,
                until=lambda found: len(found) >= 3,
                timeout_s=WORK_TIMEOUT_S,
            )
        )
        # Duplicates arriving after the summaries are skipped as well.
        late = await append_requests(kafka_bootstrap, names["compaction-requests"], valid)
        for partition, offset in late:
            ends[partition] = max(ends[partition], offset + 1)
        assert await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S) == ends
        final = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=EVENTS_PARTITIONS,
            until=lambda _: True,
            timeout_s=WORK_TIMEOUT_S,
        )
    finally:
        exit_status = await worker.stop()
    log = worker.log_since_start()
    assert exit_status == 0, log[-3000:]

    summaries = summaries_by_request(records)
    assert sorted(summaries) == sorted({r.request_id for r in valid} | {"an-older-request"})
    summaries.pop("an-older-request")
    by_offset = {
        (record.envelope.session_key, record.offset): record.envelope.event for record in logged
    }
    summary_records = {
        decode_envelope(record.value).event.id: record
        for record in records
        if decode_envelope(record.value).event.actions.compaction is not None
    }
    for request in valid:
        (summary,) = summaries[request.request_id]
        event, env = summary.envelope.event, summary.envelope
        window = [by_offset[request.session_key, offset] for offset in request.event_offsets]
        assert (env.tenant, env.session_key) == (request.tenant, request.session_key)
        assert env.idempotency_key == f"summary:{request.request_id}"
        assert env.producer_id.startswith(f"{group}/")
        assert (event.author, event.content, event.usage_metadata) == ("user", None, None)
        compaction = event.actions.compaction
        assert compaction is not None
        assert compaction.start_timestamp == request.start_timestamp
        assert compaction.end_timestamp == request.end_timestamp
        assert compaction.compacted_content.role == "model"
        parts = compaction.compacted_content.parts or []
        assert [part.text for part in parts] == [extractive_summary(window)]
        # The summary went to its session's partition, after the range.
        record = summary_records[event.id]
        assert record.key == request.session_key.encode()
        assert record.partition == session_partition(record.key, EVENTS_PARTITIONS)
        assert {r.partition for r in records if r.key == record.key} == {record.partition}
        assert summary.offset > request.end_offset
    assert summaries_by_request(final).keys() == summaries_by_request(records).keys()
    assert all(len(found) == 1 for found in summaries_by_request(final).values())

    # A stale request is withdrawn with one refusal (no dead letter), so the projector stops
    # waiting on it; a valid request answered by its summary is refused by nobody.
    refusals = Counter(refused_request_id(decode_envelope(record.value).event) for record in final)
    assert refusals[rewound.request_id] == refusals[covered.request_id] == 1
    assert not any(refusals[request.request_id] for request in valid)
    assert f"dropped request={rewound.request_id}" in log
    assert f"dropped request={covered.request_id}" in log
    assert "reason=covered by the summary at offset" in log
    assert "reason=rewound" in log
    assert "reason=answered" in log

    by_source = {(letter.source_partition, letter.source_offset): letter for letter in letters}
    assert len(letters) == len(by_source) == 3
    mismatch_at = placed[requests.index(mismatched)]
    future_at = placed[requests.index(future)]
    assert by_source[mismatch_at].stage == "check"
    assert "range not found" in by_source[mismatch_at].reason
    assert "holds event" in by_source[mismatch_at].reason
    assert by_source[mismatch_at].original_value == encode(mismatched)
    assert by_source[mismatch_at].source_topic == names["compaction-requests"]
    assert by_source[future_at].stage == "read"
    assert "last stable offset" in by_source[future_at].reason
    assert by_source[garbage].stage == "decode"
    assert by_source[garbage].original_value == b"not json"


async def test_a_range_deleted_by_retention_is_dead_lettered(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix, group = unique_topic("sd"), unique_topic("summarizer")
    await create_topics_for(kafka_bootstrap, prefix, events_partitions=1, partitions=1)
    names = topics(prefix)
    envelopes = [envelope(session_key(0), e) for n in range(4) for e in invocation_events(0, n)]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    (request, *_) = planned_requests(session_key(0), logged)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:  # as retention would: the log now starts after the range's first event
        await admin.delete_records(
            {TopicPartition(names["events"], 0): RecordsToDelete(request.start_offset + 1)}
        )
    finally:
        await admin.close()
    ((_, offset),) = await append_requests(kafka_bootstrap, names["compaction-requests"], [request])
    worker = WorkerProcess(worker_env(kafka_bootstrap, prefix, group), tmp_path / "worker.log")
    await worker.start()
    try:
        committed = await wait_committed(kafka_bootstrap, group, {0: offset + 1}, WORK_TIMEOUT_S)
        assert committed == {0: offset + 1}, worker.log_since_start()[-3000:]
        letters = dead_letters(
            await read_topic(
                kafka_bootstrap,
                names["dead-letters"],
                partitions=1,
                until=lambda found: len(found) >= 1,
                timeout_s=WORK_TIMEOUT_S,
            )
        )
    finally:
        assert await worker.stop() == 0
    (letter,) = letters
    assert letter.stage == "read"
    assert f"offset {request.start_offset} is below the log start" in letter.reason
    assert letter.original_value == encode(request)
