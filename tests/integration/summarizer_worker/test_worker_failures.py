"""Summarizer failures, against the real broker and a local OpenAI-compatible server.

A transient failure (503) is retried with backoff while the next sessions'
requests, behind it in the same partition, are summarized; a rejection (400)
and a failure that outlasts the retries are dead-lettered with their reason
and refused in their session. The pipeline's loop is the only retry loop:
each attempt is one HTTP call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from projections.event_kinds import refused_request_id
from schemas.codec import decode_envelope
from tests.conftest import unique_topic
from tests.support.chat_server import ChatServer, Reply
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

WORK_TIMEOUT_S = 90.0
RETRY_ATTEMPTS = 3
# Sessions, each named by a marker its prompt alone contains.
FLAKY, STEADY, REJECTED, DOWN = 100, 101, 102, 103


@pytest.fixture
async def chat_server() -> AsyncIterator[ChatServer]:
    """A local chat-completions server in this test's event loop."""
    server = ChatServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def _marker(index: int) -> str:
    return f"question 0 of {index}?"


async def test_a_transient_failure_is_retried_without_holding_up_other_sessions(
    kafka_bootstrap: str, tmp_path: Path, chat_server: ChatServer
) -> None:
    prefix, group = unique_topic("sf"), unique_topic("summarizer")
    await create_topics_for(kafka_bootstrap, prefix, events_partitions=2, partitions=1)
    names = topics(prefix)
    sessions = (FLAKY, STEADY, REJECTED, DOWN)
    envelopes = [
        envelope(session_key(s), event)
        for s in sessions
        for n in range(3)
        for event in invocation_events(s, n)
    ]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    requests = {
        s: planned_requests(
            session_key(s), [r for r in logged if r.envelope.session_key == session_key(s)]
        )[0]
        for s in sessions
    }
    unavailable = Reply(status=503, body={"error": {"message": "overloaded"}})
    chat_server.script_for(_marker(FLAKY), unavailable, unavailable)
    chat_server.script_for(_marker(REJECTED), Reply(status=400, body={"error": "bad model"}))
    chat_server.script_for(_marker(DOWN), *[unavailable] * RETRY_ATTEMPTS)
    # One partition: the flaky session's request comes first, the others queue behind it.
    placed = await append_requests(
        kafka_bootstrap, names["compaction-requests"], [requests[s] for s in sessions]
    )
    worker = WorkerProcess(
        worker_env(
            kafka_bootstrap,
            prefix,
            group,
            CTXSTREAM_SUMMARIZER="openai",
            CTXSTREAM_OPENAI_BASE_URL=chat_server.base_url,
            CTXSTREAM_OPENAI_MODEL="test-model",
            CTXSTREAM_SUMMARIZER_RETRY_ATTEMPTS=str(RETRY_ATTEMPTS),
            CTXSTREAM_SUMMARIZER_RETRY_BASE_S="1.0",
        ),
        tmp_path / "worker.log",
    )
    await worker.start()
    try:
        ends = {0: placed[-1][1] + 1}
        committed = await wait_committed(kafka_bootstrap, group, ends, WORK_TIMEOUT_S)
        assert committed == ends, worker.log_since_start()[-3000:]
        wanted = [requests[FLAKY].request_id, requests[STEADY].request_id]
        records = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=2,
            until=answered(wanted),
            timeout_s=WORK_TIMEOUT_S,
        )
        letters = dead_letters(
            await read_topic(
                kafka_bootstrap,
                names["dead-letters"],
                partitions=1,
                until=lambda found: len(found) >= 2,
                timeout_s=WORK_TIMEOUT_S,
            )
        )
    finally:
        assert await worker.stop() == 0

    summaries = summaries_by_request(records)
    assert sorted(summaries) == sorted(wanted)
    (flaky,) = summaries[requests[FLAKY].request_id]
    (steady,) = summaries[requests[STEADY].request_id]
    # The steady session went on while the flaky one waited for its retries.
    assert steady.envelope.event.timestamp < flaky.envelope.event.timestamp
    asked = [r for r in chat_server.received if _marker(FLAKY) in str(r.body)]
    assert len(asked) == 3  # two 503s, then the summary
    usage = flaky.envelope.event.usage_metadata
    assert usage is not None
    assert usage.prompt_token_count is not None
    assert usage.prompt_token_count > 0

    by_offset = {letter.source_offset: letter for letter in letters}
    assert sorted(by_offset) == [placed[2][1], placed[3][1]]
    rejected, down = by_offset[placed[2][1]], by_offset[placed[3][1]]
    assert (rejected.stage, down.stage) == ("summarize", "summarize")
    assert "HTTP 400" in rejected.reason
    assert f"summarizer failed {RETRY_ATTEMPTS} times" in down.reason
    assert "HTTP 503" in down.reason
    log = worker.log_since_start()
    assert log.count(f"summarizer retry request={requests[FLAKY].request_id}") == 2
    # One HTTP call per attempt: the backend does not retry inside the pipeline's loop.
    down_calls = [r for r in chat_server.received if _marker(DOWN) in str(r.body)]
    assert len(down_calls) == RETRY_ATTEMPTS
    refused = {
        found: record.key
        for record in records
        if (found := refused_request_id(decode_envelope(record.value).event)) is not None
    }
    assert refused == {
        requests[REJECTED].request_id: session_key(REJECTED).encode(),
        requests[DOWN].request_id: session_key(DOWN).encode(),
    }
