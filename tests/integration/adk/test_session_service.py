"""What the drop-in does beyond ADK's in-memory service, each against an independent oracle.

Staleness: ADK's own ``DatabaseSessionService`` on SQLite is the oracle (the in-memory
service never raises ``StaleSessionError``); the same test runs on both. Ids too long
once escaped: the drop-in refuses them naming the field (ADK's services accept any id).
"""

from __future__ import annotations

import time

import pytest
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.sessions import BaseSessionService
from google.genai import types

from ctxstream.adk.session_service import SessionService

pytestmark = pytest.mark.integration


@pytest.fixture(params=["adk_database", "ctxstream_service"])
def stale_checking_service(request: pytest.FixtureRequest) -> BaseSessionService:
    """ADK's database service (the oracle), then the drop-in: the same test runs on both."""
    service: BaseSessionService = request.getfixturevalue(request.param)
    return service


def _said(text: str, timestamp: float) -> Event:
    return Event(
        author="user",
        invocation_id="inv",
        timestamp=timestamp,
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


async def test_a_session_that_missed_a_write_is_stale(
    stale_checking_service: BaseSessionService, app_name: str
) -> None:
    service = stale_checking_service
    await service.create_session(app_name=app_name, user_id="u", session_id="s")
    first = await service.get_session(app_name=app_name, user_id="u", session_id="s")
    second = await service.get_session(app_name=app_name, user_id="u", session_id="s")
    assert first is not None
    assert second is not None
    now = time.time()
    await service.append_event(first, _said("one", now))
    with pytest.raises(StaleSessionError):
        await service.append_event(second, _said("two", now + 1))
    assert second.events == []
    # The holder that wrote goes on; a fresh read goes on too.
    await service.append_event(first, _said("three", now + 2))
    fresh = await service.get_session(app_name=app_name, user_id="u", session_id="s")
    assert fresh is not None
    assert [e.content.parts[0].text for e in fresh.events if e.content and e.content.parts] == [
        "one",
        "three",
    ]
    await service.append_event(fresh, _said("four", now + 3))


@pytest.mark.parametrize(
    ("field", "user_id", "session_id"), [("user_id", "/" * 43, "s"), ("session_id", "u", "%" * 43)]
)
async def test_ids_too_long_once_escaped_name_the_field(
    ctxstream_service: SessionService, app_name: str, field: str, user_id: str, session_id: str
) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: .* at most 128"):
        await ctxstream_service.create_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
