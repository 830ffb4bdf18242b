"""What google-adk 2.13.0 itself computes for one conformance vector's input.

Runs only in the recorder's throwaway environment (google-adk installed, the
project not imported). Each ``expected_<kind>`` takes a vector's ``input`` (as
JSON, exactly as it is written to the vector file) and returns the vector's
``expected`` value, computed by calling ADK's own functions: contents assembly,
the post-invocation and pre-request compaction hooks, the default summarizer
and the in-memory session service. The summarizer's model is a scripted fake
(no network), so the summaries' text is ours but every range, seed and window
is ADK's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import compaction as adk_compaction
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import (
    LlmEventSummarizer,
)
from google.adk.events._rewind_events import _apply_rewinds
from google.adk.events.event import Event
from google.adk.flows.llm_flows.context import _contents
from google.adk.flows.llm_flows.context._compaction import (
    _process_compaction_events,
)
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions import (
    InMemorySessionService,
    _rewind_utils,
)
from google.genai import types
from pydantic import Field

ADK_VERSION = "2.13.0"
EVENT_SERIALIZATION = "Event.model_dump(mode='json', exclude_none=True, by_alias=True)"
#: What a ``token_threshold`` vector calls the summary its run produced.
NEW_SUMMARY_ID = "NEW"
#: What a ``session_state`` vector calls the rewind event (its id is random).
REWIND_ID = "REWIND"
#: Usage the fake summarizer model reports for every summary.
SUMMARY_USAGE = {"promptTokenCount": 321, "candidatesTokenCount": 7, "totalTokenCount": 328}

Json = dict[str, Any]


def dump_event(event: Any) -> Json:
    """An ADK event as vector JSON (camelCase aliases, ``None`` left out)."""
    data: Json = event.model_dump(mode="json", exclude_none=True, by_alias=True)
    return data


def dump_content(content: Any) -> Json:
    """A genai ``Content`` as vector JSON."""
    data: Json = content.model_dump(mode="json", exclude_none=True, by_alias=True)
    return data


def parse_events(events: list[Json]) -> list[Any]:
    """ADK ``Event`` objects of vector JSON events (ADK's own validation)."""
    return [Event.model_validate(event) for event in events]


class SummaryLlm(BaseLlm):
    """The summarizer's scripted model: answers every prompt with the next text.

    ``texts`` is consumed in call order; when it runs out, ``summary <n>`` is
    used. Every prompt is kept in ``prompts``.
    """

    texts: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        prompt = llm_request.contents[0].parts[0].text
        self.prompts.append(prompt)
        text = self.texts.pop(0) if self.texts else f"summary {len(self.prompts)}"
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=text)]),
            usage_metadata=types.GenerateContentResponseUsageMetadata.model_validate(SUMMARY_USAGE),
        )


class SilentLlm(BaseLlm):
    """An agent model for hooks that never call it (compaction needs an LlmAgent)."""

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        nothing: tuple[Any, ...] = ()
        for item in nothing:  # an async generator that never yields
            yield item
        raise AssertionError("the agent's model is not called by the compaction hooks")


class Capture:
    """What one compaction run handed the summarizer and read, by patching ADK's module."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.token_counts: list[int | None] = []
        #: Which hook is running (the runner's recorder sets it); pre-request otherwise.
        self.phase = "pre_request"


@contextlib.contextmanager
def capturing() -> Iterator[Capture]:
    """Wrap ADK's summarize step and token reader to record what they saw.

    ``_summarize_events_with_trace`` is the single place both triggers call the
    summarizer from (it receives the trigger name and the exact window);
    ``_latest_prompt_token_count`` is what the token trigger reads.
    """
    capture = Capture()
    summarize = adk_compaction._summarize_events_with_trace
    latest = adk_compaction._latest_prompt_token_count

    async def summarize_spy(**kwargs: Any) -> Any:
        event = await summarize(**kwargs)
        capture.calls.append(
            {
                "trigger": kwargs["trigger"],
                "phase": capture.phase,
                "window": list(kwargs["events_to_compact"]),
                "session_events": list(kwargs["session"].events),
                "summary": event,
            }
        )
        return event

    def latest_spy(*args: Any, **kwargs: Any) -> int | None:
        count: int | None = latest(*args, **kwargs)
        capture.token_counts.append(count)
        return count

    adk_compaction._summarize_events_with_trace = summarize_spy
    adk_compaction._latest_prompt_token_count = latest_spy
    try:
        yield capture
    finally:
        adk_compaction._summarize_events_with_trace = summarize
        adk_compaction._latest_prompt_token_count = latest


def compaction_config(config: Mapping[str, Any], summarizer: Any) -> Any:
    """ADK's config object for a vector's ``config`` plus a summarizer."""
    return EventsCompactionConfig(summarizer=summarizer, **config)


def seed_json(window: list[Any], session_events: list[Any]) -> Json | None:
    """The seed ADK put first in a window (an event not in the session), or None."""
    if not window or any(window[0] is event for event in session_events):
        return None
    seed = window[0]
    return {
        "timestamp": seed.timestamp,
        "author": seed.author,
        "branch": seed.branch,
        "content": dump_content(seed.content) if seed.content is not None else None,
    }


def real_ids(window: list[Any], session_events: list[Any]) -> list[str]:
    """Ids of the window's items that are session events (the seed is not)."""
    return [
        event.id
        for event in window
        if any(event is session_event for session_event in session_events)
    ]


def range_json(summary: Any) -> Json | None:
    """``{start_timestamp, end_timestamp}`` of a summary event, or None."""
    if summary is None or summary.actions.compaction is None:
        return None
    compaction = summary.actions.compaction
    return {
        "start_timestamp": compaction.start_timestamp,
        "end_timestamp": compaction.end_timestamp,
    }


async def _session_with(events: list[Any]) -> tuple[Any, Any]:
    service = InMemorySessionService()
    session = await service.create_session(app_name="conformance", user_id="u1", session_id="s1")
    session.events = list(events)
    return service, session


def _app(config: Any) -> Any:
    agent = LlmAgent(name="root", model=SilentLlm(model="silent"))
    return App(name="conformance", root_agent=agent, events_compaction_config=config)


# ---------------------------------------------------------------------------
# contents


def expected_contents(vector_input: Mapping[str, Any]) -> Json:
    """Request contents for one agent: ``_get_contents`` or ``_get_current_turn_contents``."""
    events = parse_events(vector_input["events"])
    build: Callable[..., list[Any]] = (
        _contents._get_contents
        if vector_input["include_contents"] == "default"
        else _contents._get_current_turn_contents
    )
    contents = build(
        vector_input["current_branch"],
        events,
        vector_input["agent_name"],
        preserve_function_call_ids=vector_input["preserve_function_call_ids"],
        isolation_scope=vector_input["isolation_scope"],
        include_thoughts_from_other_agents=vector_input["include_thoughts_from_other_agents"],
    )
    return {"contents": [dump_content(content) for content in contents]}


# ---------------------------------------------------------------------------
# sliding_window: the runner's post-invocation hook


def expected_sliding_window(vector_input: Mapping[str, Any]) -> Json:
    """The post-invocation hook (token pair first when configured) over the events."""
    return asyncio.run(_sliding_window(vector_input))


async def _sliding_window(vector_input: Mapping[str, Any]) -> Json:
    config_json = vector_input["config"]
    config = compaction_config(config_json, LlmEventSummarizer(llm=SummaryLlm(model="summary")))
    app = _app(config)
    service, session = await _session_with(parse_events(vector_input["events"]))
    session_events = list(session.events)
    with capturing() as capture:
        returned = [
            event
            async for event in adk_compaction._run_compaction_for_sliding_window(
                app, session, service
            )
        ]
    summarized = [call for call in capture.calls if call["summary"] is not None]
    if len(summarized) > 1 or len(returned) > 1:
        raise AssertionError("one hook run makes at most one summary")
    call = summarized[0] if summarized else None
    result: Json = {
        "trigger": call["trigger"] if call is not None else None,
        "summarized_event_ids": real_ids(call["window"], session_events) if call else [],
        "seed": seed_json(call["window"], session_events) if call else None,
        "compaction": range_json(call["summary"]) if call else None,
    }
    if "token_threshold" in config_json:
        result["token_observed_prompt_token_count"] = (
            capture.token_counts[0] if capture.token_counts else None
        )
    return result


# ---------------------------------------------------------------------------
# token_threshold


def expected_token_threshold(vector_input: Mapping[str, Any]) -> Json:
    """Token-threshold compaction, pre-request (agent name) or post-invocation hook."""
    return asyncio.run(_token_threshold(vector_input))


async def _token_threshold(vector_input: Mapping[str, Any]) -> Json:
    config = compaction_config(
        vector_input["config"], LlmEventSummarizer(llm=SummaryLlm(model="summary"))
    )
    agent_name = vector_input["agent_name"]
    events = parse_events(vector_input["events"])
    service, session = await _session_with(events)
    session_events = list(session.events)
    with capturing() as capture:
        triggered = await adk_compaction._run_compaction_for_token_threshold_config(
            config=config,
            session=session,
            session_service=service,
            agent=LlmAgent(name=agent_name or "root", model=SilentLlm(model="silent")),
            agent_name=agent_name,
            current_branch=vector_input["current_branch"],
            isolation_scope=None,
        )
    call = capture.calls[0] if capture.calls and capture.calls[0]["summary"] else None
    if bool(triggered) != (call is not None):
        raise AssertionError("a triggered run appends exactly the summary it made")
    live = _apply_rewinds(events)
    scoped = [event for event in live if event.isolation_scope is None]
    previous_end = adk_compaction._latest_compaction_end_timestamp(scoped)
    candidates = [
        event for event in scoped if not event.actions.compaction and event.timestamp > previous_end
    ]
    summarized = real_ids(call["window"], session_events) if call else []
    visible = list(live)
    names: dict[int, str] = {
        id(event.actions): event.id for event in live if event.actions.compaction
    }
    if call is not None:
        summary = call["summary"]
        visible.append(summary)
        names[id(summary.actions)] = NEW_SUMMARY_ID
    shown = _process_compaction_events(visible, agent_name)
    return {
        "observed_prompt_token_count": capture.token_counts[0] if capture.token_counts else None,
        "triggered": bool(triggered),
        "summarized_event_ids": summarized,
        "seed": seed_json(call["window"], session_events) if call else None,
        "compaction": range_json(call["summary"]) if call else None,
        "previous_compaction_end_timestamp": previous_end,
        "candidate_event_ids": [event.id for event in candidates],
        "retained_event_ids": [event.id for event in candidates if event.id not in summarized],
        "visible_after": [
            f"summary:{names[id(event.actions)]}" if event.actions.compaction else event.id
            for event in shown
        ],
    }


# ---------------------------------------------------------------------------
# summarizer_render


def expected_summarizer_render(vector_input: Mapping[str, Any]) -> Json:
    """The default summarizer's transcript, prompt and summary event for a window."""
    return asyncio.run(_summarizer_render(vector_input))


async def _summarizer_render(vector_input: Mapping[str, Any]) -> Json:
    events = parse_events(vector_input["events"])
    llm = SummaryLlm(model="summary")
    summarizer = LlmEventSummarizer(llm=llm)
    history = summarizer._format_events_for_prompt(events)
    summary = await summarizer.maybe_summarize_events(events=events)
    called = bool(llm.prompts)
    shape: Json | None = None
    if summary is not None:
        compaction = summary.actions.compaction
        assert compaction is not None  # a summary carries its compaction
        shape = {
            "author": summary.author,
            "content_is_null": summary.content is None,
            "invocation_id_is_fresh": all(
                event.invocation_id != summary.invocation_id for event in events
            ),
            "start_timestamp": compaction.start_timestamp,
            "end_timestamp": compaction.end_timestamp,
            "compacted_content_role": compaction.compacted_content.role,
            "usage_metadata_passed_through": summary.usage_metadata is not None
            and summary.usage_metadata.model_dump(exclude_none=True, by_alias=True)
            == SUMMARY_USAGE,
        }
    return {
        "conversation_history": history,
        "llm_called": called,
        "prompt_ends_with_history": llm.prompts[0].endswith("\n\n" + history) if called else None,
        "summary_event": shape,
    }


# ---------------------------------------------------------------------------
# session_state


def expected_session_state(vector_input: Mapping[str, Any]) -> Json:
    """``append_event`` of each event, an optional rewind, every state view."""
    return asyncio.run(_session_state(vector_input))


async def _session_state(vector_input: Mapping[str, Any]) -> Json:
    app, user = "conformance", "u1"
    service = InMemorySessionService()
    working = await service.create_session(
        app_name=app, user_id=user, session_id="s1", state=vector_input["initial_state"]
    )
    state_after_create = dict(working.state)
    for event in parse_events(vector_input["events"]):
        await service.append_event(session=working, event=event)
    stored = await _stored(service, app, user)
    appended = [event.id for event in stored.events]
    rewind_shape: Json | None = None
    rewind_id: str | None = None
    target = vector_input["rewind_before_invocation_id"]
    if target is not None:
        before = {event.id for event in stored.events}
        await _rewind_utils.rewind_session(
            session_service=service,
            session=working,
            rewind_before_invocation_id=target,
            app_name=app,
        )
        stored = await _stored(service, app, user)
        (rewind,) = [event for event in stored.events if event.id not in before]
        rewind_id = rewind.id
        rewind_shape = {
            "author": rewind.author,
            "rewind_before_invocation_id": rewind.actions.rewind_before_invocation_id,
            "state_delta": dict(rewind.actions.state_delta),
            "invocation_id_prefix": rewind.invocation_id[:2],
        }
    probe = None
    if vector_input.get("probe_new_session"):
        probe_session = await service.create_session(app_name=app, user_id=user, session_id="s2")
        probe = dict(probe_session.state)
    return {
        "state_after_create": state_after_create,
        "appended_event_ids": appended,
        "working_session_state": dict(working.state),
        "stored_session_state": dict(stored.state),
        "app_state": dict(service.app_state.get(app, {})),
        "user_state": dict(service.user_state.get(app, {}).get(user, {})),
        "stored_event_state_deltas": {
            (REWIND_ID if event.id == rewind_id else event.id): dict(event.actions.state_delta)
            for event in stored.events
        },
        "rewind_event": rewind_shape,
        "new_session_state": probe,
    }


EXPECTED: dict[str, Callable[[Mapping[str, Any]], Json]] = {
    "contents": expected_contents,
    "sliding_window": expected_sliding_window,
    "token_threshold": expected_token_threshold,
    "summarizer_render": expected_summarizer_render,
    "session_state": expected_session_state,
}


async def _stored(service: Any, app: str, user: str) -> Any:
    """The stored session ``s1`` (it exists: the caller created it)."""
    stored = await service.get_session(app_name=app, user_id=user, session_id="s1")
    assert stored is not None
    return stored
