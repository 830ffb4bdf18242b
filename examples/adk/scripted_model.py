"""A deterministic ``BaseLlm`` for the example: its answer depends only on its request.

No network and no key. Each agent gets its own instance naming the agent it speaks for:
the coordinator transfers weather questions to ``weather_agent`` and bookings to
``booking_agent``; a sub-agent calls its tool for its own kind of request, answers from the
tool's result, and hands anything else back to the coordinator. Every request it receives
is kept (``requests``), so a run can show how large the model's context was; its usage
metadata counts a token per four characters of the contents.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field

#: Which agent serves which words of the user's message.
_DOMAINS = {"weather_agent": ("weather",), "booking_agent": ("book", "table")}


class ScriptedLlm(BaseLlm):
    """The model of one agent of the example (``agent``: the agent it speaks for)."""

    agent: str
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One reply: a transfer, a tool call, or text, chosen from the request alone."""
        self.requests.append(llm_request)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=context_chars(llm_request) // 4, candidates_token_count=10
        )
        content = types.Content(role="model", parts=[self._reply(llm_request)])
        yield LlmResponse(content=content, usage_metadata=usage)

    def _reply(self, request: LlmRequest) -> types.Part:
        answered = _tool_result(request)
        if answered is not None:
            return types.Part(text=_answer(answered))
        text = _users_message(request)
        mine = [a for a, words in _DOMAINS.items() if any(w in text.lower() for w in words)]
        if self.agent == "coordinator":
            if mine:
                return _call("transfer_to_agent", agent_name=mine[0])
            return types.Part(text="Hello! I can tell you the weather or book you a table.")
        if self.agent not in mine:
            return _call("transfer_to_agent", agent_name="coordinator")
        if self.agent == "weather_agent":
            return _call("get_weather", city=_city(text))
        people = re.search(r"\bfor (\d+)", text)
        place = re.search(r"\bat ([A-Z][\w ]*?)(?: for|$)", text)
        return _call(
            "book_table",
            restaurant=place.group(1) if place else "the usual place",
            people=int(people.group(1)) if people else 2,
        )


def _call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def _tool_result(request: LlmRequest) -> types.FunctionResponse | None:
    """The last content's tool result (not a transfer's), if it ends with one."""
    last = request.contents[-1] if request.contents else None
    for part in (last.parts or []) if last is not None else []:
        response = part.function_response
        if response is not None and response.name != "transfer_to_agent":
            return response
    return None


def _answer(result: types.FunctionResponse) -> str:
    fields = result.response or {}
    if result.name == "get_weather":
        return f"The weather in {fields.get('city')}: {fields.get('weather')}."
    return (
        f"Booked {fields.get('people')} at {fields.get('restaurant')}, "
        f"confirmation {fields.get('confirmation')}."
    )


def _users_message(request: LlmRequest) -> str:
    """The text of the user's latest message (other agents' quoted turns left out)."""
    for content in reversed(request.contents):
        texts = [p.text for p in content.parts or [] if p.text]
        if content.role == "user" and texts and not texts[0].startswith("For context"):
            return " ".join(texts)
    return ""


def _city(text: str) -> str:
    """The word after "in" ("the weather in Oslo today" -> "Oslo"), else "Paris"."""
    found = re.search(r"\bin ([A-Za-z]+)", text)
    return found.group(1).capitalize() if found else "Paris"


def context_chars(request: LlmRequest) -> int:
    """The size of the request's contents: their JSON characters (no tokenizer here)."""
    return sum(len(c.model_dump_json(exclude_none=True)) for c in request.contents)
