"""A request no summary answers is emitted again, same id, attempt + 1, until a summary
answers it; the metrics endpoint counts what the worker did."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.keys import SessionKey
from tests.conftest import free_ports, unique_topic
from tests.integration.streams.test_projector_compaction import summary_answering
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    create_deployment_topics,
    projector_settings,
    requests_on,
    running_projector,
    scripted_sessions,
    wait_caught_up,
    wait_for,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 60.0
TIMEOUT_S = 1.0  # the request timeout under test
MARKER_RETRIES = 3  # retries of another request after the answer: three timeouts passed
RETRY_WAIT_S = 30.0


def _session(number: int) -> list[Envelope]:
    """Scripted session `number` alone: four invocations."""
    return [e for e in scripted_sessions(number + 1, 4) if e.session_key == session_key(number)]


def _attempts(emitted: list[CompactionRequest], request_id: str) -> int:
    return sum(r.request_id == request_id for r in emitted)


async def _first_of(bootstrap: str, topic: str, key: SessionKey) -> str:
    """The id of session `key`'s first request, once it is on `topic`."""
    found: list[str] = []

    async def emitted() -> bool:
        found[:] = [
            r.request_id for r in await requests_on(bootstrap, topic) if r.session_key == key
        ]
        return bool(found)

    await wait_for(f"a request of {key}", emitted, RETRY_WAIT_S)
    return found[0]


@pytest.mark.parametrize("engine", ENGINES)
async def test_unanswered_requests_are_retried_until_a_summary_answers(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    (port,) = free_ports(1)
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("proj"),
        data_dir=tmp_path / "data",
        engine=engine,
        compaction={"compaction_interval": 3, "overlap_size": 1},
        compaction_overrides={},
        compaction_request_timeout_s=TIMEOUT_S,
        # Retries only here: the refusal after the last attempt has its own test.
        compaction_request_max_attempts=1000,
        request_check_interval_s=0.2,
        metrics_port=port,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    requests_topic = settings.topic("compaction-requests")
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await append_envelopes(kafka_bootstrap, events, _session(0))
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        async def retried_twice() -> bool:
            return any(r.attempt >= 3 for r in await requests_on(kafka_bootstrap, requests_topic))

        await wait_for("two retries of the request", retried_twice, RETRY_WAIT_S)
        emitted = await requests_on(kafka_bootstrap, requests_topic)
        assert len({r.request_id for r in emitted}) == 1
        attempts = [r.attempt for r in emitted]
        assert attempts == list(range(1, len(attempts) + 1))

        first = emitted[0]
        key = SessionKey(first.session_key)
        await append_envelopes(
            kafka_bootstrap, events, [envelope(key, summary_answering(first, 2_000.0))]
        )
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        # The evidence that the retry timer ran on after the answer: a second session,
        # appended now, whose request no summary answers, retried MARKER_RETRIES times.
        # Counted from that request's first emission, after a retry already due when
        # the answer was folded has passed.
        await append_envelopes(kafka_bootstrap, events, _session(1))
        marker = await _first_of(kafka_bootstrap, requests_topic, session_key(1))
        settled = _attempts(await requests_on(kafka_bootstrap, requests_topic), first.request_id)

        async def marker_retried() -> bool:
            emitted = await requests_on(kafka_bootstrap, requests_topic)
            return _attempts(emitted, marker) > MARKER_RETRIES

        await wait_for("retries of the second session's request", marker_retried, RETRY_WAIT_S)
        emitted = await requests_on(kafka_bootstrap, requests_topic)
        assert _attempts(emitted, first.request_id) == settled  # no retry after the answer

        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200
        text = response.text
    assert key == session_key(0)
    # Two sessions of 16 events and the summary.
    assert "ctxstream_projector_events_applied_total 33.0" in text
    assert (
        'ctxstream_projector_requests_emitted_total{kind="first",trigger="sliding_window"} 2.0'
        in text
    )
    assert 'kind="retry"' in text
    assert "ctxstream_projector_dead_letters_total 0.0" in text
    assert 'ctxstream_projector_consumer_lag{partition="0"} 0.0' in text
    assert "ctxstream_projector_batch_seconds_count" in text
