"""``append_if`` and ``create_if_absent`` against the real broker and a real native worker.

Concurrent writers each on a client of their own: of N appends expecting one writer offset
exactly one is accepted and the session's live events hold only its event; of M creates of
one session exactly one; a create after a deletion is accepted and the state is its own; a
pipeline summary between a read and an append leaves the append accepted, while another
writer's event refuses it. The oracles: the texts and states the test wrote, the log read
back, and the offsets the appends returned.
"""

from __future__ import annotations

import asyncio

import pytest

from ctxstream import Client
from ctxstream.appends.conditional import Verdict, append_if, create_if_absent
from projections.compaction.summary_request import with_summary_request_id
from projections.fold.projection import project
from schemas.creation_mark import is_creation
from schemas.event import event_to_json
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import summary_event, text_event
from tests.support.kafka import read_log

pytestmark = pytest.mark.integration

WAIT_S = 30.0
WRITERS = 5


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


async def _texts(client: Client, key: str, offset: int) -> list[str]:
    contents = await client.context(key, min_offset=offset, timeout_s=WAIT_S)
    return [part.text or "" for content in contents for part in content.parts or ()]


async def _each_on_its_client(deployment: ProjectorSettings, calls: list[object]) -> list[Verdict]:
    """Run each call (a function of a started client) on a client of its own, at once."""

    async def one(call: object) -> Verdict:
        async with Client(settings=deployment) as client:
            assert callable(call)
            return await call(client)  # type: ignore[no-any-return]

    return list(await asyncio.gather(*(one(call) for call in calls)))


async def test_of_concurrent_appends_expecting_one_writer_exactly_one_is_accepted(
    deployment: ProjectorSettings,
) -> None:
    key = _session_key()
    async with Client(settings=deployment) as client:
        first = await append_if(
            client,
            key,
            text_event("q0", "inv0", 100.0, "start"),
            expected_offset=-1,
            timeout_s=WAIT_S,
        )
    assert first.accepted
    assert first.writer_offset == first.offset
    events = [text_event(f"q{n}", f"inv{n}", 101.0 + n, f"writer {n}") for n in range(WRITERS)]
    verdicts = await _each_on_its_client(
        deployment,
        [
            lambda c, e=event: append_if(c, key, e, expected_offset=first.offset, timeout_s=WAIT_S)
            for event in events
        ],
    )
    accepted = [n for n, verdict in enumerate(verdicts) if verdict.accepted]
    assert len(accepted) == 1
    winner = verdicts[accepted[0]]
    assert winner.writer_offset == winner.offset
    for verdict in verdicts:
        assert not verdict.deleted
        if not verdict.accepted:
            assert verdict.writer_offset == winner.offset  # the writer that came first
    last = max(verdict.offset for verdict in verdicts)
    async with Client(settings=deployment) as client:
        assert await _texts(client, key, last) == ["start", f"writer {accepted[0]}"]
    log = (await read_log(deployment.kafka_bootstrap, deployment.topic("events")))[key]
    assert sorted(record.offset for record in log) == sorted(
        [first.offset, *(verdict.offset for verdict in verdicts)]
    )
    assert all(record.envelope.expected_offset == first.offset for record in log[1:])


async def test_of_concurrent_creates_of_one_session_exactly_one_is_accepted(
    deployment: ProjectorSettings,
) -> None:
    key = _session_key()
    verdicts = await _each_on_its_client(
        deployment,
        [
            lambda c, n=n: create_if_absent(
                c, key, event_id=f"c{n}", timestamp=50.0, state={"by": n}, timeout_s=WAIT_S
            )
            for n in range(WRITERS)
        ],
    )
    accepted = [verdict for verdict in verdicts if verdict.accepted]
    assert len(accepted) == 1
    winner = accepted[0]
    assert all(v.writer_offset == winner.offset for v in verdicts if not v.accepted)
    log = (await read_log(deployment.kafka_bootstrap, deployment.topic("events")))[key]
    assert len(log) == WRITERS
    assert all(is_creation(record.envelope.event) for record in log)
    first = min(log, key=lambda record: record.offset)
    assert first.offset == winner.offset  # the first on the partition wins
    assert project(key, log).state.session == first.envelope.event.actions.state_delta


async def test_a_create_after_a_deletion_starts_over_with_only_its_state(
    deployment: ProjectorSettings,
) -> None:
    key = _session_key()
    async with Client(settings=deployment) as client:
        created = await create_if_absent(
            client, key, event_id="c1", timestamp=10.0, state={"old": 1, "shared": "a"}
        )
        assert created.accepted
        again = await create_if_absent(client, key, event_id="c2", timestamp=11.0, state={})
        assert not again.accepted
        assert again.writer_offset == created.offset
        assert not again.deleted
        state_event = text_event("q1", "inv1", 12.0, "hi", actions={"stateDelta": {"more": 2}})
        wrote = await append_if(client, key, state_event, expected_offset=created.offset)
        assert wrote.accepted
        deleted = await client.delete_session(key)
        stale = await append_if(
            client, key, text_event("q2", "inv2", 13.0, "late"), expected_offset=wrote.offset
        )
        assert not stale.accepted
        assert stale.deleted
        assert stale.writer_offset == -1
        fresh = await create_if_absent(
            client, key, event_id="c3", timestamp=14.0, state={"shared": "b"}
        )
    assert fresh.accepted
    assert not fresh.deleted
    assert deleted < stale.offset < fresh.offset
    log = (await read_log(deployment.kafka_bootstrap, deployment.topic("events")))[key]
    assert project(key, log).state.session == {"shared": "b"}


async def test_a_pipeline_summary_between_a_read_and_an_append_makes_nothing_stale(
    deployment: ProjectorSettings,
) -> None:
    key = _session_key()
    async with Client(settings=deployment) as client:
        created = await create_if_absent(client, key, event_id="c1", timestamp=1.0, state={})
        held = await append_if(
            client, key, text_event("q1", "inv1", 2.0, "one"), expected_offset=created.offset
        )
        assert held.accepted
        summary = with_summary_request_id(summary_event("s1", 2.0, 2.0, 3.0, "sum"), "req-1")
        await client.append(key, event_to_json(summary))
        after = await append_if(
            client, key, text_event("q2", "inv2", 4.0, "two"), expected_offset=held.offset
        )
        assert after.accepted
        other = await client.append(key, text_event("q3", "inv3", 5.0, "other writer"))
        stale = await append_if(
            client, key, text_event("q4", "inv4", 6.0, "stale"), expected_offset=after.offset
        )
        assert not stale.accepted
        assert stale.writer_offset == other
        assert "stale" not in await _texts(client, key, stale.offset)
