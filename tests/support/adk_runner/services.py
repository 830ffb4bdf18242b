"""The session services an equivalence test runs on, each made fresh for one run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService


@dataclass(frozen=True)
class ServiceFactory:
    """How to make a fresh session service for one run.

    Attributes:
        name: The test id.
        make: Builds the service (a fresh session store each time).
        full_history: ``get_session`` returns every event (False: a bounded
            view, whose events are compared only through what the models saw).
    """

    name: str
    make: Callable[[], Awaitable[BaseSessionService]]
    full_history: bool = True


async def _in_memory() -> BaseSessionService:
    return InMemorySessionService()


#: ADK's own in-memory service: the reference every other service is held to.
ADK_IN_MEMORY = ServiceFactory("adk-in-memory", _in_memory)
