"""The session services an equivalence test runs on, each made fresh for one run.

A ctxstream service needs a deployment (:class:`Site`, the test's fixture); each
run gets a tenant of its own, so runs of one script never share a session.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final, Protocol

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService

from ctxstream.adk.session_service import SessionService

#: How long a drop-in's get_session waits for a pipeline compaction in flight, in a test:
#: long enough that a loaded machine never lets a turn start without its summary.
COMPACTION_WAIT_S: Final = 60.0


class Site(Protocol):
    """A ctxstream deployment the drop-in can be pointed at."""

    def uri_for(self, tenant: str, *, view: str = "full") -> str:
        """The service URI of `tenant` on the deployment, in `view`."""


class MakeService(Protocol):
    """Builds a fresh session service; `site` is the deployment a drop-in uses."""

    async def __call__(self, site: Site | None = None) -> BaseSessionService:
        """A service with no sessions of the run's script yet."""


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
    make: MakeService
    full_history: bool = True


async def _in_memory(site: Site | None = None) -> BaseSessionService:
    del site
    return InMemorySessionService()


#: ADK's own in-memory service: the reference every other service is held to.
ADK_IN_MEMORY = ServiceFactory("adk-in-memory", _in_memory)


def ctxstream_factory(view: str) -> ServiceFactory:
    """``ctxstream.adk.SessionService`` in `view`, on a tenant of its own for each run."""

    async def make(site: Site | None = None) -> BaseSessionService:
        if site is None:
            raise ValueError(f"ctxstream-{view}: a deployment (site) is needed to make it")
        tenant = f"eq{uuid.uuid4().hex[:12]}"
        return SessionService(site.uri_for(tenant, view=view), compaction_wait_s=COMPACTION_WAIT_S)

    return ServiceFactory(f"ctxstream-{view}", make, full_history=view == "full")


async def close_service(service: BaseSessionService) -> None:
    """Release what a service holds (a drop-in's client and connections; ADK's: nothing)."""
    close = getattr(service, "close", None)
    if close is not None:
        await close()
