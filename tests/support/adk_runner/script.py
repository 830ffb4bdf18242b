"""The turns of a conversation, driven through an unchanged ``Runner`` on a session service.

:func:`run_script` creates the session, sends each user message with
``Runner.run_async`` and returns what the models were given and the events
the service holds at the end (a fresh ``get_session``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from google.adk.apps.app import EventsCompactionConfig
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from tests.support.adk_runner.agents import APP_NAME, build_app
from tests.support.adk_runner.recorder import RecordedCall, Recorder

#: Transfers both ways, tool calls on both sub-agents, plain turns in between.
MULTI_AGENT_SCRIPT: Final = (
    "hello",
    "transfer helper",
    "weather Paris",
    "and tomorrow?",
    "transfer researcher",
    "count the words of this line",
    "thanks",
    "transfer coordinator",
    "goodbye",
)

SessionServiceFactory = Callable[[], Awaitable[BaseSessionService]]
"""Makes a fresh session service for one run (ADK's, or the drop-in)."""


@dataclass(frozen=True)
class RunResult:
    """What one run leaves: the model calls in order, and the session's events."""

    calls: list[RecordedCall]
    events: list[Event]


async def run_script(
    service: BaseSessionService,
    script: Sequence[str],
    compaction: EventsCompactionConfig | None,
    *,
    user_id: str = "u1",
    session_id: str = "s1",
    before_turn: Callable[[BaseSessionService], Awaitable[None]] | None = None,
) -> RunResult:
    """Run `script` turn by turn; `before_turn` (e.g. a wait for the pipeline) runs before each."""
    recorder = Recorder()
    runner = Runner(app=build_app(recorder, compaction), session_service=service)
    await service.create_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    try:
        for message in script:
            if before_turn is not None:
                await before_turn(service)
            content = types.Content(role="user", parts=[types.Part(text=message)])
            async for _ in runner.run_async(
                user_id=user_id, session_id=session_id, new_message=content
            ):
                pass
    finally:
        await runner.close()
    session = await service.get_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
    assert session is not None, "the session is gone after the run"
    return RunResult(recorder.calls, list(session.events))
