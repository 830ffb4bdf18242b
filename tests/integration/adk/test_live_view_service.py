"""``view=live`` of the drop-in against ``view=full`` of the same session, by ADK's own readers.

A session is written through the drop-in (full view): invocations of a user and a model, then
ADK-shaped compaction summaries over the earlier ones. The live view's service must return
fewer events than the full one, a subset of them in the same order, and ADK's own readers
(``_get_contents`` for each agent and both ``include_contents`` modes, ``find_agent_to_run``)
must answer the same on both lists. ``num_recent_events`` and ``after_timestamp`` apply to
the live list as ADK's in-memory service applies them to what it holds.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import AsyncIterator

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from ctxstream.adk.session_service import SessionService
from tests.integration.adk.conftest import AdkDeployment
from tests.support.live_view_oracle import contents_answers, router_answers

INVOCATIONS = 12
#: Each summary covers this many invocations, ending two before the next one.
SUMMARIZED = (range(0, 5), range(0, 9))


def _text(author: str, invocation: int, stamp: float, text: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        id=f"{author}-{invocation}",
        invocation_id=f"inv-{invocation}",
        author=author,
        timestamp=stamp,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


def _summary(number: int, start: float, end: float, stamp: float) -> Event:
    compacted = types.Content(role="model", parts=[types.Part(text=f"summary {number}")])
    return Event(
        id=f"summary-{number}",
        invocation_id=f"compaction-{number}",
        author="user",
        timestamp=stamp,
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=start, end_timestamp=end, compacted_content=compacted
            )
        ),
    )


def _session_events(base: float) -> list[Event]:
    """Two turns per invocation, the summaries appended after the invocation that follows."""
    events: list[Event] = []
    for invocation in range(INVOCATIONS):
        stamp = base + 10.0 * invocation
        events.append(_text("user", invocation, stamp, f"question {invocation}"))
        events.append(_text("root", invocation, stamp + 1.0, f"answer {invocation}"))
        for number, covered in enumerate(SUMMARIZED):
            if invocation == covered[-1] + 2:
                first, last = base + 10.0 * covered[0], base + 10.0 * covered[-1] + 1.0
                events.append(_summary(number, first, last, stamp + 2.0))
    return events


@pytest.fixture
async def services(
    adk_deployment: AdkDeployment, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[SessionService, SessionService]]:
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", adk_deployment.dsn)
    monkeypatch.setenv("CTXSTREAM_SINK_SCHEMA", adk_deployment.schema)
    full = SessionService(adk_deployment.uri)
    live = SessionService(adk_deployment.uri + "&view=live")
    try:
        yield full, live
    finally:
        await asyncio.gather(full.close(), live.close())


async def _written(service: SessionService, app: str) -> Session:
    session = await service.create_session(app_name=app, user_id="u1", session_id="s1")
    for event in _session_events(time.time()):
        await service.append_event(session, event)
    return session


async def test_the_live_view_answers_adks_readers_as_the_full_history_does(
    services: tuple[SessionService, SessionService],
) -> None:
    full_service, live_service = services
    app = "live_app"
    await _written(full_service, app)
    full = await full_service.get_session(app_name=app, user_id="u1", session_id="s1")
    live = await live_service.get_session(app_name=app, user_id="u1", session_id="s1")
    assert full is not None
    assert live is not None
    # The oracle of what was held: ADK's in-memory service fed the same events.
    reference = InMemorySessionService()
    held = await reference.create_session(app_name=app, user_id="u1", session_id="s1")
    for event in _session_events(full.events[0].timestamp):
        await reference.append_event(held, event)
    assert [e.id for e in full.events] == [e.id for e in held.events]

    full_ids = [e.id for e in full.events]
    live_ids = [e.id for e in live.events]
    assert len(live_ids) < len(full_ids)
    assert live_ids == [i for i in full_ids if i in set(live_ids)]
    assert {"summary-1", "user-11", "root-11"} <= set(live_ids)
    assert "user-0" not in live_ids  # masked by both summaries: no reader needs it
    assert live.state == full.state
    assert live._storage_update_marker == full._storage_update_marker

    plan = (["root", "other"], [None], [None])
    assert contents_answers(live.events, plan) == contents_answers(full.events, plan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ADK's "experimental" notes
        routed = router_answers(live.events, ["root", "other"])
        assert routed == router_answers(full.events, ["root", "other"])

    # GetSessionConfig applies to the live list as ADK applies it to the list it holds.
    recent = await live_service.get_session(
        app_name=app, user_id="u1", session_id="s1", config=GetSessionConfig(num_recent_events=3)
    )
    assert recent is not None
    assert [e.id for e in recent.events] == live_ids[-3:]
    cut = live.events[-4].timestamp
    after = await live_service.get_session(
        app_name=app, user_id="u1", session_id="s1", config=GetSessionConfig(after_timestamp=cut)
    )
    assert after is not None
    assert [e.id for e in after.events] == [e.id for e in live.events if e.timestamp >= cut]
    none = await live_service.get_session(
        app_name=app, user_id="u1", session_id="s1", config=GetSessionConfig(num_recent_events=0)
    )
    assert none is not None
    assert none.events == []
