"""The ADK benchmark's workload: its summaries are the ones ADK's own compaction writes.

The oracle is google-adk 2.13.0 itself: after each invocation of the generated session,
ADK's token-threshold compaction (``google.adk.apps.compaction``, with the workload's
``EventsCompactionConfig`` and a summarizer that only records its range) runs on the events
before that point; it must summarize exactly where the workload has a summary, over the same
range. Events round-trip through ADK's own services elsewhere (the integration test).
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import EventsCompactionConfig
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.compaction import _run_compaction_for_token_threshold_config
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.sessions import InMemorySessionService
from google.genai import types

from ctxstream.bench.adk.workload import (
    AGENT_NAME,
    EVENT_RETENTION_SIZE,
    TOKEN_THRESHOLD,
    adk_session,
    expected_state,
)

EVENTS = 160

# ADK marks its summarizer base class experimental, with a warning on first use.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\]:UserWarning")


class RangeSummarizer(BaseEventsSummarizer):
    """Summarizes nothing: a compaction event over the events it was given."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """The range ADK chose, as ``LlmEventSummarizer`` would cover it."""
        compaction = EventCompaction(
            start_timestamp=events[0].timestamp,
            end_timestamp=events[-1].timestamp,
            compacted_content=types.Content(role="model", parts=[types.Part(text="s")]),
        )
        return Event(
            author="user", invocation_id="summary", actions=EventActions(compaction=compaction)
        )


async def _adk_summary(before: list[Event]) -> tuple[float | None, float | None] | None:
    """ADK's post-invocation token-threshold summary range over `before`, or None."""
    service = InMemorySessionService()
    session = await service.create_session(app_name="support", user_id="u", session_id="s")
    for event in before:
        await service.append_event(session, event.model_copy(deep=True))
    config = EventsCompactionConfig(
        token_threshold=TOKEN_THRESHOLD,
        event_retention_size=EVENT_RETENTION_SIZE,
        summarizer=RangeSummarizer(),
    )
    agent = LlmAgent(name=AGENT_NAME, model="gemini-2.5-flash")
    held = len(session.events)
    compacted = await _run_compaction_for_token_threshold_config(
        config=config, session=session, session_service=service, agent=agent
    )
    if not compacted:
        return None
    compaction = session.events[held].actions.compaction
    assert compaction is not None
    return compaction.start_timestamp, compaction.end_timestamp


def _invocation_ends(events: list[Event]) -> list[int]:
    """The positions right after each invocation (before a summary or the next invocation)."""
    ends = []
    for index in range(1, len(events)):
        previous, event = events[index - 1], events[index]
        if previous.actions.compaction is None and event.invocation_id != previous.invocation_id:
            ends.append(index)
    return ends


def test_the_summaries_are_where_and_what_adks_token_compaction_writes() -> None:
    events = adk_session(EVENTS).events
    summaries = 0
    for end in _invocation_ends(events):
        ours = events[end].actions.compaction
        expected = (ours.start_timestamp, ours.end_timestamp) if ours else None
        assert asyncio.run(_adk_summary(events[:end])) == expected, end
        summaries += ours is not None
    assert summaries >= 5  # the workload does compact, many times over


def test_the_session_is_an_agents_conversation_with_state_in_every_scope() -> None:
    session = adk_session(EVENTS)
    assert len(session.events) == EVENTS
    assert len({e.id for e in session.events}) == EVENTS
    stamps = [e.timestamp for e in session.events]
    assert stamps == sorted(set(stamps))
    calls = {c.id for e in session.events for c in e.get_function_calls()}
    answered = {r.id for e in session.events for r in e.get_function_responses()}
    assert calls
    assert answered <= calls
    assert {key.split(":")[0] for key in expected_state(session.events)} >= {"app", "user"}
    assert adk_session(EVENTS) == session  # the same arguments, the same events
