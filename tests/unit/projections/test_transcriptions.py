"""Transcriptions (§8.5), id stripping (§8.8) and ``none`` mode (§9)."""

from __future__ import annotations

from typing import Any

from projections.contents.transcriptions import merge_transcriptions
from schemas.event import Event
from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, summary_event, text


def _chunk(event_id: str, timestamp: float, field: str, value: str, author: str = "user") -> Event:
    fields: dict[str, Any] = {field: {"text": value}}
    return event(event_id, author, timestamp, None, **fields)


def test_consecutive_transcription_chunks_become_one_turn() -> None:
    events = [
        _chunk("e1", 100, "inputTranscription", "Hel"),
        _chunk("e2", 101, "inputTranscription", "lo"),
        _chunk("e3", 102, "outputTranscription", "Hi ", "agent"),
        _chunk("e4", 103, "outputTranscription", "there", "agent"),
        event("e5", "user", 104, [text("typed")]),
        _chunk("e6", 105, "inputTranscription", "again"),
    ]
    merged = merge_transcriptions(events)
    assert [e.id for e in merged] == ["e2", "e4", "e5", "e6"]
    assert texts(events) == ["user:Hello", "model:Hi there", "user:typed", "user:again"]


def test_transcription_without_text_passes_through_and_adds_nothing() -> None:
    events = [
        _chunk("e1", 100, "inputTranscription", ""),
        event("e2", "user", 101, [text("hi")]),
    ]
    merged = merge_transcriptions(events)
    assert [e.id for e in merged] == ["e1", "e2"]
    assert texts(events) == ["user:hi"]


def test_client_ids_stripped_unless_preserved() -> None:
    events = [
        event("e1", "agent", 100, [call("adk-1"), call("model-2")]),
        event("e2", "agent", 101, [resp("adk-1"), resp("model-2")], role="user"),
    ]
    stripped = contents(events)
    assert "id" not in stripped[0]["parts"][0]["functionCall"]
    assert stripped[0]["parts"][1]["functionCall"]["id"] == "model-2"
    assert "id" not in stripped[1]["parts"][0]["functionResponse"]
    assert stripped[1]["parts"][1]["functionResponse"]["id"] == "model-2"
    kept = contents(events, preserve_function_call_ids=True)
    assert kept[0]["parts"][0]["functionCall"]["id"] == "adk-1"
    # The session's events are never changed by stripping.
    assert events[0].content is not None
    assert events[0].content.parts is not None
    assert events[0].content.parts[0].function_call is not None
    assert events[0].content.parts[0].function_call.id == "adk-1"


def test_none_mode_summary_after_user_message_becomes_the_anchor() -> None:
    # Deliberate ADK quirk (§14.5): the summary is authored "user" and not empty.
    events = [
        event("e1", "user", 100, [text("old")]),
        event("e2", "agent", 101, [text("old reply")]),
        event("e3", "user", 102, [text("current question")], inv="inv2"),
        summary_event("s1", 100, 101, 103, "summary of old"),
    ]
    assert texts(events, include_contents="none") == ["model:summary of old"]


def test_none_mode_transfer_is_no_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("billing please")]),
        event("e2", "root", 101, [call("t1", "transfer_to_agent", {"agent_name": "billing"})]),
        event(
            "e3",
            "root",
            102,
            [resp("t1", "transfer_to_agent")],
            role="user",
            actions={"transferToAgent": "billing"},
        ),
    ]
    got = texts(events, agent_name="billing", include_contents="none")
    assert got[0] == "user:billing please"
    assert len(got) == 3
    assert "[root] called tool `transfer_to_agent`" in got[1]


def test_none_mode_other_agent_message_can_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("question")]),
        event("e2", "agent", 101, [text("my answer")]),
        event("e3", "helper", 102, [text("helper note")]),
    ]
    got = texts(events, include_contents="none")
    assert len(got) == 1
    assert "[helper] said:" in got[0]


def test_none_mode_without_anchor_is_empty() -> None:
    events = [event("e1", "agent", 100, [text("only me")])]
    assert contents(events, include_contents="none") == []


def test_none_mode_ignores_the_thoughts_flag() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "helper", 101, [{"text": "hidden", "thought": True}]),
    ]
    # With the flag the helper's thought would make e2 a valid anchor; in
    # none mode the flag is off, so the user message anchors and e2 vanishes.
    got = texts(events, include_contents="none", include_thoughts_from_other_agents=True)
    assert got == ["user:q"]
    assert len(texts(events, include_thoughts_from_other_agents=True)) == 2


def test_none_mode_posted_result_for_unknown_call_owes_nothing() -> None:
    events = [
        event("e1", "user", 100, [text("old")]),
        event("e2", "user", 101, [text("question")], inv="inv2"),
        event("e3", "user", 102, [resp("nobody-called-this")], inv="inv3"),
    ]
    # The result answers no recorded call, so it owes nothing: the question
    # anchors (the orphan response itself is then pruned).
    assert texts(events, include_contents="none") == ["user:question"]


def test_each_run_of_output_transcriptions_starts_a_new_buffer() -> None:
    events = [
        event("o1", "agent", 1.0, output_transcription={"text": "hel"}),
        event("o2", "agent", 2.0, output_transcription={"text": "lo"}),
        event("t", "agent", 3.0, [text("between")]),
        event("o3", "agent", 4.0, output_transcription={"text": "again"}),
    ]
    assert texts(merge_transcriptions(events)) == ["model:hello", "model:between", "model:again"]
