"""M2: a request no summary answers is emitted at most `compaction_request_max_attempts` times,
then refused on `events`; folding the refusal ends the session's wait, and the session decides
again over a new window. Everything the worker published equals a clean fold of the log."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from projections.event_kinds import refused_request_id
from schemas.codec import decode_envelope, encode
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    append,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_all,
    read_log,
    requests_on,
    running_projector,
    scripted_sessions,
    wait_for,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
TIMEOUT_S = 90.0
MAX_ATTEMPTS = 2


async def _refusals(bootstrap: str, topic: str) -> dict[str, str]:
    """Refused request id -> the session whose `events` record refuses it."""
    refused: dict[str, str] = {}
    for record in await read_all(bootstrap, topic):
        envelope = decode_envelope(record.value, record_key=record.key)
        request_id = refused_request_id(envelope.event)
        if request_id is not None:
            refused[request_id] = envelope.session_key
    return refused


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_unanswered_request_is_refused_after_its_last_attempt_and_decided_anew(
    tmp_path: Path,
    kafka_bootstrap: str,
    engine: str,
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("refusal"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=1,
        compaction_request_timeout_s=1.0,
        request_check_interval_s=0.25,
        compaction_request_max_attempts=MAX_ATTEMPTS,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    requests_topic = settings.topic("compaction-requests")
    await append(
        kafka_bootstrap,
        events,
        [(e.session_key.encode(), encode(e)) for e in scripted_sessions(3, 4)],
    )
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        # The requests the core decides over the log so far: each session's first.
        decided_first = {
            r.request_id
            for _, requests in clean_fold(
                settings, await read_log(kafka_bootstrap, events)
            ).values()
            for r in requests
        }
        first = await _wait_requests(settings, requests_topic, decided_first)

        async def all_refused() -> bool:
            return first <= set(await _refusals(kafka_bootstrap, events))

        await wait_for("a refusal of every first request", all_refused, TIMEOUT_S)
        # The sessions decide again once the refusal is folded: more invocations
        # bring requests over new windows.
        await append(
            kafka_bootstrap,
            events,
            [
                (e.session_key.encode(), encode(e))
                for e in scripted_sessions(3, 3, first_invocation=5)
            ],
        )

        async def decided_again() -> bool:
            ids = {r.request_id for r in await requests_on(kafka_bootstrap, requests_topic)}
            return len(ids - first) >= len(first)

        await wait_for("new requests after the refusals", decided_again, TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        folded = clean_fold(settings, log)
        await wait_for_snapshots(settings, expected_snapshots(folded), TIMEOUT_S)

    refusals = await _refusals(kafka_bootstrap, events)
    emitted = await requests_on(kafka_bootstrap, requests_topic)
    attempts = Counter(r.request_id for r in emitted)
    for request_id in first:
        assert refusals[request_id]  # keyed by its session
        assert attempts[request_id] <= MAX_ATTEMPTS
        assert {r.attempt for r in emitted if r.request_id == request_id} <= set(
            range(1, MAX_ATTEMPTS + 1)
        )
    decided = {r.request_id for _, requests in folded.values() for r in requests}
    assert {r.request_id for r in emitted} <= decided  # nothing the core did not decide
    assert first < decided  # and the core decided anew after the refusals too
    assert all(
        refusals[rid] == next(r.session_key for r in emitted if r.request_id == rid)
        for rid in first
    )


async def _wait_requests(settings: ProjectorSettings, topic: str, expected: set[str]) -> set[str]:
    """Wait until every request of `expected` is on `topic`; the ids there then."""
    found: set[str] = set()

    async def every() -> bool:
        nonlocal found
        found = {r.request_id for r in await requests_on(settings.kafka_bootstrap, topic)}
        return expected <= found

    await wait_for(f"the {len(expected)} first requests", every, TIMEOUT_S)
    return found
