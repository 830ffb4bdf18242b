"""A ``BaseLlm`` whose answer is a function of its request alone: no clock, no state, no randomness.

The answer reads the newest content of the request:

* a function response (a tool's result came back) -> a text that quotes it;
* else the newest user text (other agents' turns aside), by the agent's
  :data:`RULES`: ``transfer <agent>`` calls ``transfer_to_agent``,
  ``weather <city>`` calls ``lookup_weather``, ``count <words>`` calls
  ``count_words``; anything else is answered in text.

Every text answer ends with ``[contents=N]``: how many contents the model was
given, so a run whose context differs also answers differently afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Final

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from tests.support.adk_runner.recorder import Recorder

#: How ADK opens another agent's turn shown to this one (``_contents.py``).
CONTEXT_PREFIX: Final = "For context:"

#: Which commands each agent acts on; the others it answers in text.
RULES: Final[dict[str, frozenset[str]]] = {
    "coordinator": frozenset({"transfer"}),
    "helper": frozenset({"transfer", "weather"}),
    "researcher": frozenset({"transfer", "count"}),
}


class ScriptedLlm(BaseLlm):
    """The model of one agent; every request it receives goes to `recorder` first."""

    agent: str
    recorder: Recorder

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One complete answer (never partial), decided by :func:`answer`."""
        self.recorder.record(self.agent, llm_request)
        yield LlmResponse(content=answer(self.agent, llm_request.contents))


def answer(agent: str, contents: list[types.Content]) -> types.Content:
    """What `agent`'s model says to `contents`."""
    size = len(contents)
    last = contents[-1].parts or [] if contents else []
    for part in last:
        if part.function_response is not None:
            result = part.function_response.response
            return _text(f"{agent}: {part.function_response.name} said {result} [contents={size}]")
    said = _newest_user_text(contents)
    command, _, rest = said.partition(" ")
    if command in RULES[agent] and not (command == "transfer" and rest == agent):
        return _call(command, rest)
    return _text(f"{agent}: you said {said!r} [contents={size}]")


def _newest_user_text(contents: list[types.Content]) -> str:
    """The newest user text that is not another agent's turn shown to this one ("For context")."""
    for content in reversed(contents):
        if content.role != "user":
            continue
        texts = [part.text for part in content.parts or [] if part.text]
        if texts and not texts[0].startswith(CONTEXT_PREFIX):
            return " ".join(texts)
    return ""


def _call(command: str, rest: str) -> types.Content:
    name, args = {
        "transfer": ("transfer_to_agent", {"agent_name": rest}),
        "weather": ("lookup_weather", {"city": rest}),
        "count": ("count_words", {"text": rest}),
    }[command]
    call = types.FunctionCall(name=name, args=dict[str, Any](args))
    return types.Content(role="model", parts=[types.Part(function_call=call)])


def _text(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])
