"""One timed turn: ``get_session`` and ADK's contents assembly, as the Runner does them.

The Runner loads the session (``get_session`` with no config: every event its service
gives), appends the user's message to it and, before the model call, ADK's contents
processor (``google.adk.flows.llm_flows.contents.request_processor``) builds the request's
contents from ``session.events`` for the agent. :func:`time_turn` does the same for
:data:`AGENT` with a new invocation context, minus the storage of the user's message (its
cost is ``append_event``'s, measured apart); the message is added to the loaded session's
events in memory, as the Runner's append leaves them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.events.event import Event
from google.adk.flows.llm_flows.contents import request_processor
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from ctxstream.bench.adk.workload import AGENT_NAME, AdkSession, new_message


class UnusedModel(BaseLlm):
    """The agent's model: contents are assembled for it, it is never called."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Never called by the benchmark: raises RuntimeError."""
        yield _never_called()


def _never_called() -> LlmResponse:
    raise RuntimeError("the benchmark's model is never called")


def lookup_order(order_id: int) -> dict[str, object]:
    """The support agent's tool: an order's status."""
    return {"order_id": order_id, "status": "shipped"}


def check_stock(order_id: int) -> dict[str, object]:
    """The support agent's tool: whether an order's item is in stock."""
    return {"order_id": order_id, "in_stock": True}


AGENT = LlmAgent(
    name=AGENT_NAME,
    model=UnusedModel(model="bench-model"),
    instruction="You answer customers' questions about their orders.",
    tools=[lookup_order, check_stock],
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's time (milliseconds), the events ``get_session`` gave and the contents built."""

    ms: float
    events: int
    contents: list[types.Content]


async def time_turn(service: BaseSessionService, session: AdkSession, turn: int) -> Turn:
    """Load `session` from `service` and build :data:`AGENT`'s contents, timed as one.

    Raises:
        RuntimeError: `service` has no such session.
    """
    message = new_message(turn)
    started = time.perf_counter()
    loaded = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
    )
    if loaded is None:
        raise RuntimeError(f"{type(service).__name__} has no session {session.session_id}")
    returned = len(loaded.events)
    invocation_id = f"e-{uuid.uuid4()}"
    loaded.events.append(Event(invocation_id=invocation_id, author="user", content=message))
    context = InvocationContext(
        session_service=service,
        invocation_id=invocation_id,
        agent=AGENT,
        session=loaded,
        user_content=message,
        run_config=RunConfig(),
    )
    request = LlmRequest()
    async for _ in request_processor.run_async(context, request):
        pass  # the processor yields no events; it fills request.contents
    ms = (time.perf_counter() - started) * 1000
    return Turn(ms=ms, events=returned, contents=request.contents)
