"""Two unchanged ADK Runners driving one session at once: one wins, the other is stale.

Both Runners read the session before either writes (a gate on ``get_session``
holds the first two reads until both are done), then each appends its user
message against what it read. The oracle for "exactly one ``StaleSessionError``"
is ADK's own ``DatabaseSessionService`` (SQLite): the same test runs on it and
on the drop-in. On the drop-in the log is then read back: the winner's
invocation is whole and contiguous, the loser's record is the one ``stale`` row
of the session in the read model, and the loser's retry (a fresh read) follows
the winner's invocation without interleaving.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
import pytest
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService
from google.genai import types
from psycopg import sql

from ctxstream.adk import ids
from ctxstream.adk.session_service import SessionService
from tests.integration.adk.conftest import TENANT, AdkDeployment
from tests.support.adk_runner.agents import APP_NAME, build_app
from tests.support.adk_runner.recorder import Recorder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::UserWarning"),  # ADK's [EXPERIMENTAL] notices
]

MESSAGES = ("weather Paris", "count the words of this line")


@pytest.fixture(params=["adk_database", "ctxstream_service"])
def service(request: pytest.FixtureRequest) -> BaseSessionService:
    """ADK's database service (the oracle), then the drop-in: the same test runs on both."""
    found: BaseSessionService = request.getfixturevalue(request.param)
    return found


def _gate_first_reads(service: BaseSessionService, readers: int) -> None:
    """Hold the first `readers` get_session calls until all of them have read."""
    barrier = asyncio.Barrier(readers)
    read = service.get_session
    calls = 0

    async def gated(**kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        found = await read(**kwargs)
        if calls <= readers:
            await barrier.wait()
        return found

    service.get_session = gated  # type: ignore[method-assign]


async def _turn(runner: Runner, user_id: str, session_id: str, message: str) -> list[Event]:
    content = types.Content(role="user", parts=[types.Part(text=message)])
    return [
        event
        async for event in runner.run_async(
            user_id=user_id, session_id=session_id, new_message=content
        )
    ]


def _runners(service: BaseSessionService) -> list[Runner]:
    """Two Runners of the scripted App (no compaction) on `service`."""
    return [Runner(app=build_app(Recorder(), None), session_service=service) for _ in MESSAGES]


async def _race(
    service: BaseSessionService, runners: list[Runner], user_id: str, session_id: str
) -> list[object]:
    """Create the session; each Runner runs its turn, both having read before either writes."""
    await service.create_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    _gate_first_reads(service, len(runners))
    turns = (_turn(r, user_id, session_id, m) for r, m in zip(runners, MESSAGES, strict=True))
    return list(await asyncio.gather(*turns, return_exceptions=True))


def _contiguous(invocations: list[str]) -> bool:
    """Each invocation's events are one run: no invocation id comes back after another."""
    seen: list[str] = []
    for invocation in invocations:
        if not seen or seen[-1] != invocation:
            if invocation in seen:
                return False
            seen.append(invocation)
    return True


async def test_two_runners_on_one_session_one_is_stale(service: BaseSessionService) -> None:
    user_id, session_id = "u", f"s{uuid.uuid4().hex[:12]}"
    runners = _runners(service)
    try:
        outcomes = await _race(service, runners, user_id, session_id)
        stale = [n for n, o in enumerate(outcomes) if isinstance(o, StaleSessionError)]
        assert len(stale) == 1, outcomes
        (loser,) = stale
        winner = 1 - loser
        won = outcomes[winner]
        assert isinstance(won, list), outcomes
        assert won, outcomes
        after_race = await service.get_session(
            app_name=APP_NAME, user_id=user_id, session_id=session_id
        )
        assert after_race is not None
        # Only the winner's invocation is stored: its user message, then what it yielded.
        stored = after_race.events
        assert [e.id for e in stored[1:]] == [e.id for e in won]
        assert _said(stored[0]) == MESSAGES[winner]
        assert {e.invocation_id for e in stored} == {won[0].invocation_id}
        # The loser reads again and goes on: its invocation follows, not interleaved.
        retried = await _turn(runners[loser], user_id, session_id, MESSAGES[loser])
    finally:
        for runner in runners:
            await runner.close()
    final = await service.get_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    assert final is not None
    assert [e.id for e in final.events[: len(stored)]] == [e.id for e in stored]
    assert [e.id for e in final.events[len(stored) + 1 :]] == [e.id for e in retried]
    invocations = [e.invocation_id for e in final.events]
    assert _contiguous(invocations)
    assert len(set(invocations)) == 2


def _said(event: Event) -> str:
    assert event.author == "user"
    assert event.content is not None
    assert event.content.parts
    return event.content.parts[0].text or ""


async def test_the_losers_record_is_the_sessions_one_stale_row(
    ctxstream_service: SessionService, adk_deployment: AdkDeployment
) -> None:
    """On the log the loser's user message is there, and the read model marks it stale."""
    user_id, session_id = "u", f"s{uuid.uuid4().hex[:12]}"
    service = ctxstream_service
    runners = _runners(service)
    try:
        outcomes = await _race(service, runners, user_id, session_id)
    finally:
        for runner in runners:
            await runner.close()
    (loser,) = [n for n, o in enumerate(outcomes) if isinstance(o, StaleSessionError)]
    final = await service.get_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    assert final is not None
    key = ids.session_key(TENANT, APP_NAME, user_id, session_id)
    rows = await _rows(adk_deployment, key)
    stale = [(author, text) for status, author, text, _ in rows if status == "stale"]
    assert stale == [("user", MESSAGES[loser])]
    held = [event_id for status, _, _, event_id in rows if status not in _NOT_HELD]
    assert held == [e.id for e in final.events]


_NOT_HELD = ("stale", "creation")


async def _rows(deployment: AdkDeployment, key: str) -> list[tuple[str, str, str, str]]:
    """The session's rows in the read model, offset order: status, author, first text, id."""
    query = sql.SQL(
        "SELECT status, author, coalesce(event #>> '{{content,parts,0,text}}', ''), event_id "
        'FROM {}.event_rows WHERE session_key = %s ORDER BY "offset"'
    ).format(sql.Identifier(deployment.schema))
    async with await psycopg.AsyncConnection.connect(deployment.dsn) as conn:
        cursor = await conn.execute(query, (key,))
        return [tuple(row) for row in await cursor.fetchall()]
