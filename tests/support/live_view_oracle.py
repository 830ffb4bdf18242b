"""ADK 2.13.0's own readers run on a session's events, for the live view's tests.

Every answer is computed by ADK's unchanged functions (``_get_contents``,
``_get_current_turn_contents``, ``find_agent_to_run``, the sliding-window and
token-threshold compactions with a spy on the summarizer call) over google.adk
``Event`` objects converted from the project's events by ADK's own validation.
The live view is right when each answer on the kept events equals the answer
on the whole session (:func:`readers_answers`).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents._agent_router import find_agent_to_run
from google.adk.apps import compaction as adk_compaction
from google.adk.apps.app import ResumabilityConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events.event import Event as AdkEvent
from google.adk.flows.llm_flows.context import _contents
from google.adk.sessions import Session

from projections.contents.visibility import branch_segments
from projections.live_view import event_facts as facts
from schemas.event import Event, event_to_json
from tests.recorder.adk_oracle import (
    SilentLlm,
    SummaryLlm,
    _app,
    _session_with,
    capturing,
    compaction_config,
    real_ids,
)

Json = dict[str, Any]


#: An auth config ADK validates: the generated sessions name auth requests by key only.
_AUTH_CONFIG: Json = {"authScheme": {"type": "apiKey", "in": "header", "name": "key"}}


def adk_events(events: Sequence[Event]) -> list[AdkEvent]:
    """The events as google.adk ``Event`` objects (ADK's own validation of their JSON).

    Requested auth configs keep their keys (all the readers look at) with a
    body ADK accepts.
    """
    converted = []
    for event in events:
        data = event_to_json(event)
        actions = data.get("actions", {})
        if actions.get("requestedAuthConfigs"):
            actions["requestedAuthConfigs"] = dict.fromkeys(
                actions["requestedAuthConfigs"], _AUTH_CONFIG
            )
        converted.append(AdkEvent.model_validate(data))
    return converted


def readers(events: Sequence[Event]) -> tuple[list[str], list[str | None], list[str | None]]:
    """The agents, branches and isolation scopes to read the session as.

    Agents: every author but the user, and one the session never names.
    Branches: none, every branch and each of its ancestors, and one below each.
    Scopes: none, every scope, every call id no response answers (a task may start).
    """
    agents = sorted({e.author for e in events if e.author != facts.USER} | {"root", "stranger"})
    branches: set[str | None] = {None}
    for event in events:
        segments = branch_segments(event.branch)
        for depth in range(1, len(segments) + 1):
            branches.add(".".join(segments[:depth]))
        if segments:
            branches.add(f"{event.branch}.below")
    answered = {i for e in events for i in facts.response_ids(e)}
    opened = {i for e in events for i in facts.call_ids(e)}
    scopes: set[str | None] = {None} | {e.isolation_scope for e in events} | (opened - answered)
    return agents, sorted(branches, key=str), sorted(scopes, key=str)


def contents_answers(
    events: Sequence[AdkEvent], plan: tuple[list[str], list[Any], list[Any]]
) -> Json:
    """``_get_contents`` / ``_get_current_turn_contents`` for every reader of `plan`."""
    agents, branches, scopes = plan
    answers: Json = {}
    for agent in agents:
        for branch in branches:
            for scope in scopes:
                for mode, build in (
                    ("default", _contents._get_contents),
                    ("none", _contents._get_current_turn_contents),
                ):
                    built = build(branch, list(events), agent, isolation_scope=scope)
                    answers[f"{agent}|{branch}|{scope}|{mode}"] = [
                        c.model_dump(mode="json", exclude_none=True) for c in built
                    ]
    return answers


def router_answers(events: Sequence[AdkEvent], agents: Sequence[str]) -> Json:
    """``find_agent_to_run``, each agent the root of a tree of all, both resumabilities."""
    answers: Json = {}
    for root_name in agents:
        subs = [LlmAgent(name=a, model=SilentLlm(model="s")) for a in agents if a != root_name]
        root = LlmAgent(name=root_name, model=SilentLlm(model="s"), sub_agents=subs)
        session = Session(id="s", app_name="a", user_id="u", events=list(events))
        for resumable in (False, True):
            config = ResumabilityConfig(is_resumable=resumable)
            answers[f"{root_name}|{resumable}"] = find_agent_to_run(session, root, config).name
    return answers


def compaction_answers(events: Sequence[AdkEvent], overlap: int, plan: Any) -> Json:
    """The windows ADK's sliding-window and token-threshold compactions would summarize."""
    return asyncio.run(_compactions(list(events), overlap, plan))


async def _compactions(events: list[AdkEvent], overlap: int, plan: Any) -> Json:
    answers: Json = {}
    for interval in (1, 2, 3):
        config = {"compaction_interval": interval, "overlap_size": overlap}
        answers[f"sliding|{interval}"] = await _sliding(events, config)
    agents, _, scopes = plan
    for threshold, retention in ((1, 0), (50, 1), (2000, 2)):
        config = {"token_threshold": threshold, "event_retention_size": retention}
        for agent in ["", *agents[:2]]:
            for scope in scopes:
                key = f"token|{threshold}|{retention}|{agent}|{scope}"
                answers[key] = await _token(events, config, agent, scope)
    return answers


def _window(capture: Any, session_events: list[AdkEvent]) -> Json | None:
    calls = [call for call in capture.calls if call["summary"] is not None]
    if not calls:
        return None
    window = calls[0]["window"]
    seed = None if not window or any(window[0] is e for e in session_events) else window[0]
    return {
        "ids": real_ids(window, session_events),
        "seed": None if seed is None else [seed.timestamp, seed.content.model_dump(mode="json")],
        "trigger": calls[0]["trigger"],
    }


async def _sliding(events: list[AdkEvent], config: Json) -> Json | None:
    summarizer = LlmEventSummarizer(llm=SummaryLlm(model="summary"))
    app = _app(compaction_config(config, summarizer))
    service, session = await _session_with(events)
    with capturing() as capture:
        async for _ in adk_compaction._run_compaction_for_sliding_window(app, session, service):
            pass
    return _window(capture, events)


async def _token(events: list[AdkEvent], config: Json, agent: str, scope: str | None) -> Json:
    summarizer = LlmEventSummarizer(llm=SummaryLlm(model="summary"))
    service, session = await _session_with(events)
    with capturing() as capture:
        await adk_compaction._run_compaction_for_token_threshold_config(
            config=compaction_config(config, summarizer),
            session=session,
            session_service=service,
            agent=LlmAgent(name=agent or "root", model=SilentLlm(model="silent")),
            agent_name=agent,
            current_branch=None,
            isolation_scope=scope,
        )
    return {"window": _window(capture, events), "counts": capture.token_counts}


def assert_answers_alike(
    events: Sequence[Event], kept: Sequence[int], overlap: int, context: object = None
) -> None:
    """ADK's readers answer on the events at the `kept` positions as on all of `events`.

    `context` goes into the failure message (what the failure needs to be read).
    """
    plan = readers(events)
    full = readers_answers(events, overlap, plan)
    live = readers_answers([events[p] for p in kept], overlap, plan)
    for kind in full:
        for key in full[kind]:
            assert live[kind][key] == full[kind][key], (kind, key, list(kept), context)


def readers_answers(events: Sequence[Event], overlap: int, plan: Any) -> Json:
    """Every reader's answer on `events`, for the readers `plan` names."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # as below, while validating
        converted = adk_events(events)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ADK's "experimental" notes
        # ADK's own auth handling of a requested credential calls a method it deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        return {
            "contents": contents_answers(converted, plan),
            "router": router_answers(converted, plan[0]),
            "compaction": compaction_answers(converted, overlap, plan),
        }
