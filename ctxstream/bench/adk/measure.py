"""What ``ctxstream bench adk`` measures for one session size: turns on every service, appends.

:func:`time_turns` runs one untimed turn on each service, then `turns` rounds of one timed
turn on each (:func:`ctxstream.bench.adk.turns.time_turn`), the services in a different
order each round so the machine's noise falls on all; every service must give the agent the
same contents as the first (ADK's own services: a session that reads back differently is no
baseline). :func:`time_appends` times ``append_event`` of `appends` new events, one after
another on the session ``get_session`` returned, as the Runner appends a turn's events.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from ctxstream.bench.adk.turns import time_turn
from ctxstream.bench.adk.workload import AGENT_NAME, AdkSession
from ctxstream.bench.report import percentile


@dataclass(frozen=True, slots=True)
class TurnFigures:
    """One service's turns: median and p95 (milliseconds), the events and contents it gave."""

    ms: float
    p95_ms: float
    events_returned: int
    contents: int


async def time_turns(
    services: Mapping[str, BaseSessionService], session: AdkSession, turns: int
) -> dict[str, TurnFigures]:
    """Each service's turns over `session`, by name.

    Raises:
        RuntimeError: A service gave the agent other contents than the first service did.
    """
    names = list(services)
    reference = None
    returned: dict[str, int] = {}
    for name in names:  # warm-up, and the contents every service must give
        turn = await time_turn(services[name], session, -1)
        reference = turn.contents if reference is None else reference
        if turn.contents != reference:
            raise RuntimeError(f"{name} gives the agent other contents than {names[0]}")
        returned[name] = turn.events
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(turns):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append((await time_turn(services[name], session, round_number)).ms)
    contents = len(reference or [])
    return {
        name: TurnFigures(
            ms=round(statistics.median(values), 3),
            p95_ms=round(percentile(values, 0.95), 3),
            events_returned=returned[name],
            contents=contents,
        )
        for name, values in times.items()
    }


async def time_appends(
    service: BaseSessionService, session: AdkSession, appends: int
) -> tuple[float, float]:
    """p50 and p95 (milliseconds) of ``append_event`` of `appends` new events to `session`.

    Raises:
        RuntimeError: `service` has no such session.
    """
    held = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
    )
    if held is None:
        raise RuntimeError(f"{type(service).__name__} has no session {session.session_id}")
    times: list[float] = []
    for number in range(appends):
        event = _new_event(number, held.id)
        started = time.perf_counter()
        await service.append_event(held, event)
        times.append((time.perf_counter() - started) * 1000)
    return round(percentile(times, 0.5), 3), round(percentile(times, 0.95), 3)


def _new_event(number: int, session_id: str) -> Event:
    """A user message (with a state delta) or the agent's answer, in turn."""
    invocation_id = f"e-append-{session_id}-{number // 2}"
    if number % 2 == 0:
        text = f"One more question ({number})"
        return Event(
            invocation_id=invocation_id,
            author="user",
            content=types.Content(role="user", parts=[types.Part(text=text)]),
            actions=EventActions(state_delta={"questions_asked": number // 2 + 1}),
        )
    text = f"Here is the answer ({number})"
    return Event(
        invocation_id=invocation_id,
        author=AGENT_NAME,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
    )
