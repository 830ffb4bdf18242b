"""ADK's ``load_memory`` and ``PreloadMemoryTool`` on ``ctxstream.adk.MemoryService``, unchanged.

An unchanged ADK ``Runner`` (sessions in ADK's ``InMemorySessionService``: the memory
service does not care who made them) with a scripted model whose answers depend only on
its request: a statement is noted, a question asks ``load_memory``, a memory answer is
repeated. User A tells a fact in one session, user B a contradicting one; in A's next
session both tools must hand the model A's fact and nothing of B's, as they do with ADK's
own ``InMemoryMemoryService`` (the oracle, same script).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.load_memory_tool import LoadMemoryResponse, load_memory_tool
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.genai import types
from pydantic import Field

from ctxstream.adk import MemoryService

APP = "support"
A_FACT = "My sister Ingrid loves sushi"
B_FACT = "My sister Ingrid loves pizza"
QUESTION = "What does Ingrid love?"


class MemoryAskingLlm(BaseLlm):
    """Notes statements, asks ``load_memory`` for questions, repeats what memory answered."""

    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        last = llm_request.contents[-1]
        answered = [p.function_response for p in last.parts or [] if p.function_response]
        text = " ".join(p.text or "" for p in last.parts or [])
        if answered:
            said = [_text(m) for m in _memories(answered[0].response)]
            part = types.Part(text="You told me: " + "; ".join(said))
        elif text.endswith("?"):
            call = types.FunctionCall(name="load_memory", args={"query": text})
            part = types.Part(function_call=call)
        else:
            part = types.Part(text="Noted.")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _memories(response: dict[str, Any] | None) -> list[MemoryEntry]:
    """The memory entries of ``load_memory``'s function response (its result, unserialized)."""
    result = (response or {})["result"]
    assert isinstance(result, LoadMemoryResponse)
    return result.memories


def _text(memory: MemoryEntry) -> str:
    return "".join(part.text or "" for part in memory.content.parts or [])


async def _turn(runner: Runner, user: str, session_id: str, text: str) -> None:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id=user, session_id=session_id, new_message=message):
        pass


async def _what_the_model_was_given(
    memory: BaseMemoryService,
) -> tuple[list[str], list[dict[str, Any] | None]]:
    """The preloaded block of each model call of A's question, and what load_memory returned."""
    model = MemoryAskingLlm(model="scripted")
    agent = LlmAgent(name="assistant", model=model, tools=[load_memory_tool, PreloadMemoryTool()])
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)
    user_a, user_b = f"a-{uuid.uuid4().hex[:6]}", f"b-{uuid.uuid4().hex[:6]}"
    for user, fact in ((user_a, A_FACT), (user_b, B_FACT)):
        session = await sessions.create_session(app_name=APP, user_id=user)
        await _turn(runner, user, session.id, fact)
        held = await sessions.get_session(app_name=APP, user_id=user, session_id=session.id)
        assert held is not None
        await memory.add_session_to_memory(held)
    model.requests.clear()
    later = await sessions.create_session(app_name=APP, user_id=user_a)
    await _turn(runner, user_a, later.id, QUESTION)
    preloaded = [
        part.text
        for request in model.requests
        for content in request.contents
        for part in content.parts or []
        if part.text and "<PAST_CONVERSATIONS>" in part.text
    ]
    returned = [
        part.function_response.response
        for request in model.requests
        for content in request.contents
        for part in content.parts or []
        if part.function_response and part.function_response.name == "load_memory"
    ]
    return preloaded, returned


def _lines(block: str) -> list[str]:
    """The memory lines of a preloaded block (the times left out: each run has its own)."""
    return [line for line in block.splitlines() if line.startswith(("user:", "assistant:"))]


async def test_the_memory_tools_find_the_users_earlier_fact_and_nothing_of_another_user(
    memory_service: MemoryService,
) -> None:
    preloaded, returned = await _what_the_model_was_given(memory_service)
    expected_preloaded, expected_returned = await _what_the_model_was_given(InMemoryMemoryService())

    assert len(preloaded) == 2  # both model calls of the question's turn
    for block in preloaded:
        assert f"user: {A_FACT}" in block
        assert "pizza" not in block
    assert [_lines(b) for b in preloaded] == [_lines(b) for b in expected_preloaded]

    (response,) = returned
    assert [(m.author, _text(m)) for m in _memories(response)] == [("user", A_FACT)]
    (expected,) = expected_returned
    assert [_text(m) for m in _memories(expected)] == [A_FACT]
