"""Record when ADK 2.13.0's runner compacts a scripted multi-invocation session.

A scenario is a list of invocations (a user message and the model's scripted
replies), an ``EventsCompactionConfig`` and the summarizer's scripted texts.
It is run through ADK's real ``Runner`` with an ``InMemorySessionService``:
the agent is a real ``LlmAgent`` whose model is a script (text, function calls,
usage metadata with prompt token counts), its tools are real function tools,
and compaction is ADK's own (the pre-request token check before every model
call, the post-invocation hook after every invocation). Only the models are
fake, so nothing reaches the network.

ADK's ids are random and its timestamps are the wall clock; the recording
replaces both through ADK's own providers (``google.adk.platform``): a counter
for ids and a scripted clock that advances by 1.0 per reading (or per
``clock_every`` readings, so several events share a timestamp). Ids are then
renamed in stream order (events ``e1``..., invocations ``inv1``...), which
changes nothing ADK decided: it compares ids only for equality.

The session ends with one more user message of a new invocation, appended
the way the runner appends a user message and not answered: after it, every
post-invocation hook ADK ran is followed by the event that tells a stream the
invocation completed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps.app import App
from google.adk.apps.llm_event_summarizer import (
    LlmEventSummarizer,
)
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.platform import (
    time as adk_time,
)
from google.adk.platform import (
    uuid as adk_uuid,
)
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types
from pydantic import Field

from tests.recorder import adk_oracle

Json = dict[str, Any]
APP, USER, SESSION = "decisions", "u1", "s1"
CLOCK_START = 100.0


@dataclass(frozen=True)
class Call:
    """One function call in a model reply (``call_id`` None: ADK assigns ``adk-<id>``)."""

    name: str
    args: Json
    call_id: str | None = None


#: ``Reply.tokens`` for a count measured from the request: its contents' JSON
#: characters / 4, so the count falls after a compaction as a real model's does.
MEASURED = "measured"


@dataclass(frozen=True)
class Reply:
    """One scripted model response.

    ``tokens`` is the ``prompt_token_count`` the response reports: a number,
    :data:`MEASURED`, or None for no usage metadata at all.
    """

    text: str | None = None
    calls: tuple[Call, ...] = ()
    tokens: int | str | None = MEASURED
    thought: str | None = None


@dataclass(frozen=True)
class Turn:
    """One invocation: the user's message and the model's replies in call order."""

    user: str
    replies: tuple[Reply, ...]
    rewind_before: int | None = None
    """Rewind before the n-th invocation (1-based) before this turn runs."""


@dataclass(frozen=True)
class DecisionScenario:
    """A session to run through ADK's runner, with its compaction config."""

    slug: str
    description: str
    config: Json
    turns: tuple[Turn, ...]
    summaries: tuple[str, ...] = ()
    clock_every: int = 1
    agents: str = "single"
    """``single``: agent ``assistant``; ``pair``: ``coordinator`` over sub-agent ``researcher``."""
    closing_user: str = "thanks, that is all"


def lookup(query: str) -> dict[str, str]:
    """Look a fact up."""
    return {"result": f"facts about {query}"}


def fetch_report(name: str) -> dict[str, str]:
    """Fetch a long report."""
    return {"report": " ".join(f"{name}-{n}" for n in range(40))}


def start_job(task: str) -> dict[str, str]:
    """Start a long job; it answers later."""
    return {"status": "pending", "ticket": f"job-{task}"}


class ScriptedLlm(BaseLlm):
    """The agents' model: replies from ``script`` in call order, shared by every agent."""

    script: list[Any] = Field(default_factory=list)
    calls: int = 0

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if not self.script:
            raise AssertionError("the model was called more often than scripted")
        reply = self.script.pop(0)
        self.calls += 1
        yield _response(reply, _measured_tokens(llm_request))


def _measured_tokens(llm_request: Any) -> int:
    """The request's contents as JSON characters / 4 (a stand-in for a tokenizer)."""
    dumped = [
        json.dumps(content.model_dump(mode="json", exclude_none=True), sort_keys=True)
        for content in llm_request.contents
    ]
    return sum(len(text) for text in dumped) // 4


def _response(reply: Reply, measured: int) -> Any:
    parts: list[Any] = []
    if reply.thought is not None:
        parts.append(types.Part(text=reply.thought, thought=True))
    if reply.text is not None:
        parts.append(types.Part(text=reply.text))
    parts.extend(
        types.Part(
            function_call=types.FunctionCall(id=call.call_id, name=call.name, args=call.args)
        )
        for call in reply.calls
    )
    tokens = measured if reply.tokens == MEASURED else reply.tokens
    usage = (
        None
        if tokens is None
        else types.GenerateContentResponseUsageMetadata(
            prompt_token_count=tokens, candidates_token_count=12
        )
    )
    return LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


@contextlib.contextmanager
def scripted_platform(clock_every: int) -> Iterator[None]:
    """ADK's clock and id providers replaced by deterministic ones for one recording."""
    readings = itertools.count()
    ids = itertools.count(1)
    adk_time.set_time_provider(lambda: CLOCK_START + float(next(readings) // clock_every))
    adk_uuid.set_id_provider(lambda: f"x{next(ids)}")
    try:
        yield
    finally:
        adk_time.reset_time_provider()
        adk_uuid.reset_id_provider()


@contextlib.contextmanager
def hook_phases(capture: adk_oracle.Capture) -> Iterator[None]:
    """Mark summaries made inside the runner's post-invocation hook."""
    original = Runner._run_post_invocation_compaction

    async def post_invocation(self: Any, **kwargs: Any) -> None:
        capture.phase = "post_invocation"
        try:
            await original(self, **kwargs)
        finally:
            capture.phase = "pre_request"

    Runner._run_post_invocation_compaction = post_invocation  # type: ignore[method-assign]
    capture.phase = "pre_request"
    try:
        yield
    finally:
        Runner._run_post_invocation_compaction = original  # type: ignore[method-assign]


def _agent(scenario: DecisionScenario, model: Any) -> Any:
    tools: list[Any] = [lookup, fetch_report, LongRunningFunctionTool(start_job)]
    if scenario.agents == "single":
        return LlmAgent(name="assistant", model=model, tools=tools)
    researcher = LlmAgent(
        name="researcher",
        model=model,
        tools=tools,
        description="Finds facts.",
    )
    return LlmAgent(
        name="coordinator",
        model=model,
        tools=tools,
        sub_agents=[researcher],
        description="Routes work.",
    )


def record_decisions(scenario: DecisionScenario) -> tuple[Json, Json, list[str]]:
    """``(input, expected, hooks)`` of one ``compaction_decisions`` vector."""
    with scripted_platform(scenario.clock_every):
        return asyncio.run(_record(scenario))


async def _record(scenario: DecisionScenario) -> tuple[Json, Json, list[str]]:
    summary_llm = adk_oracle.SummaryLlm(model="summary", texts=list(scenario.summaries))
    config = adk_oracle.compaction_config(scenario.config, LlmEventSummarizer(llm=summary_llm))
    model = ScriptedLlm(model="scripted")
    app = App(name=APP, root_agent=_agent(scenario, model), events_compaction_config=config)
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)
    await service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    invocation_ids: list[str] = []
    with adk_oracle.capturing() as capture, hook_phases(capture):
        for turn in scenario.turns:
            if turn.rewind_before is not None:
                await runner.rewind_async(
                    user_id=USER,
                    session_id=SESSION,
                    rewind_before_invocation_id=invocation_ids[turn.rewind_before - 1],
                )
            model.script = list(turn.replies)
            async for event in runner.run_async(
                user_id=USER, session_id=SESSION, new_message=_user_content(turn.user)
            ):
                if event.invocation_id not in invocation_ids:
                    invocation_ids.append(event.invocation_id)
            if model.script:
                raise AssertionError(f"{scenario.slug}: {len(model.script)} replies left unused")
        session = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert session is not None
        # The next invocation's first event, as the runner appends it; no reply.
        closing = Event(
            invocation_id=f"e-{Event.new_id()}",
            author="user",
            content=_user_content(scenario.closing_user),
        )
        await service.append_event(session=session, event=closing)
    session = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    return _vector_parts(scenario, session.events, capture)


def _user_content(text: str) -> Any:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _vector_parts(
    scenario: DecisionScenario, stream: list[Any], capture: adk_oracle.Capture
) -> tuple[Json, Json, list[str]]:
    """Split ADK's stream: raw events and summarizer answers (input), compactions (expected).

    Also returns which hook appended each compaction (``post_invocation`` or
    ``pre_request``), which the vector keeps beside ``expected``.
    """
    rename = _Renamer()
    raw: list[Json] = []
    made = {call["summary"].id: call for call in capture.calls if call["summary"] is not None}
    appended = [event.id for event in stream if event.actions.compaction is not None]
    if sorted(appended) != sorted(made):
        raise AssertionError(f"{scenario.slug}: ADK's summaries and the appended ones differ")
    compactions: list[Json] = []
    summaries: list[Json] = []
    hooks: list[str] = []
    for event in stream:
        if event.actions.compaction is None:
            raw.append(rename.event(event))
            continue
        call = made[event.id]
        window = call["window"]
        session_ids = {item.id for item in call["session_events"]}
        compaction = event.actions.compaction
        compactions.append(
            {
                "after_index": len(raw) - 1,
                "trigger": call["trigger"],
                "summarized_event_ids": [
                    rename.event_id(item.id) for item in window if item.id in session_ids
                ],
                "seed": adk_oracle.seed_json(window, call["session_events"]),
                "start_timestamp": compaction.start_timestamp,
                "end_timestamp": compaction.end_timestamp,
            }
        )
        summaries.append(
            {
                "text": compaction.compacted_content.parts[0].text,
                "usage_metadata": event.usage_metadata.model_dump(
                    mode="json", exclude_none=True, by_alias=True
                )
                if event.usage_metadata is not None
                else None,
                "timestamp": event.timestamp,
            }
        )
        hooks.append(call["phase"])
    vector_input: Json = {"config": dict(scenario.config), "events": raw, "summaries": summaries}
    return vector_input, {"compactions": compactions}, hooks


class _Renamer:
    """Stream-order names for ADK's ids: events ``e1``..., invocations ``inv1``..."""

    def __init__(self) -> None:
        self.events: dict[str, str] = {}
        self.invocations: dict[str, str] = {}

    def event_id(self, original: str) -> str:
        if original not in self.events:
            raise AssertionError(f"summarized event {original} is not an earlier raw event")
        return self.events[original]

    def invocation_id(self, original: str) -> str:
        return self.invocations.setdefault(original, f"inv{len(self.invocations) + 1}")

    def event(self, event: Any) -> Json:
        self.events[event.id] = f"e{len(self.events) + 1}"
        data: Json = adk_oracle.dump_event(event)
        data["id"] = self.events[event.id]
        if event.invocation_id:
            data["invocationId"] = self.invocation_id(event.invocation_id)
        target = event.actions.rewind_before_invocation_id
        if target:
            data["actions"]["rewindBeforeInvocationId"] = self.invocation_id(target)
        return data
