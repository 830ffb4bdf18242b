"""A scripted multi-session workload makes the projector emit exactly the compaction requests
the pure core computes on the same log, summaries answering them included."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections.compaction.summary_request import with_summary_request_id
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from schemas.keys import SessionKey
from tests.conftest import unique_topic
from tests.support.events import envelope
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    requests_on,
    running_projector,
    scripted_sessions,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

SESSIONS = 6
FIRST_INVOCATIONS = 8
LATER_INVOCATIONS = 8
STARTUP_TIMEOUT_S = 60.0  # joining the group, creating the changelog
CATCH_UP_TIMEOUT_S = 90.0  # folding the workload and committing its offsets


def summary_answering(request: CompactionRequest, timestamp: float) -> Event:
    """The summary event a summarizer appends for `request`."""
    event = Event.model_validate(
        {
            "id": f"summary-{request.request_id}",
            "invocationId": f"cmp-{request.request_id}",
            "author": "user",
            "timestamp": timestamp,
            "actions": {
                "compaction": {
                    "startTimestamp": request.start_timestamp,
                    "endTimestamp": request.end_timestamp,
                    "compactedContent": {"role": "model", "parts": [{"text": "summary"}]},
                }
            },
        }
    )
    return with_summary_request_id(event, request.request_id)


@pytest.mark.parametrize("engine", ENGINES)
async def test_requests_equal_the_cores_on_the_same_log(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap, unique_topic("proj"), data_dir=tmp_path / "data", engine=engine
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        first = scripted_sessions(SESSIONS, FIRST_INVOCATIONS)
        await append_envelopes(kafka_bootstrap, events, first)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        # Act as the summarizer: answer every request emitted so far.
        emitted = await requests_on(kafka_bootstrap, settings.topic("compaction-requests"))
        assert emitted, "the first phase decided no request"
        summary_clock = 1_000.0 + (FIRST_INVOCATIONS + 1) * 10
        summaries = [
            envelope(SessionKey(request.session_key), summary_answering(request, summary_clock))
            for request in emitted
        ]
        await append_envelopes(kafka_bootstrap, events, summaries)
        later = scripted_sessions(
            SESSIONS, LATER_INVOCATIONS, first_invocation=FIRST_INVOCATIONS + 2
        )
        await append_envelopes(kafka_bootstrap, events, later)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)
        expected = {key: requests for key, (_, requests) in folded.items()}
        await wait_for_snapshots(settings, expected_snapshots(folded), CATCH_UP_TIMEOUT_S)

    requests = await requests_on(kafka_bootstrap, settings.topic("compaction-requests"))
    actual: dict[SessionKey, list[CompactionRequest]] = {}
    for request in requests:
        assert request.attempt == 1  # the timeout (300 s) never passed
        actual.setdefault(SessionKey(request.session_key), []).append(request)
    assert actual == {key: reqs for key, reqs in expected.items() if reqs}
    triggers = {request.trigger for request in requests}
    assert triggers == {"sliding_window", "token_threshold"}
    assert sum(len(reqs) for reqs in expected.values()) > SESSIONS  # summaries led to more
