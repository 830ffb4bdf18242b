"""Spec audit of summarizer rendering, summary events and session state (§7, §10, §11).

Scenarios are built from the reference text and run either directly or as
vector-shaped inputs through the conformance adapters; expected values are
worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.conformance.session_state import run as run_state_vector
from projections.conformance.summarizer_render import run as run_render_vector
from projections.render import render_transcript, summary_event, truncate
from projections.state import (
    InvocationNotFoundError,
    SessionStores,
    append_event,
    create_session,
    rewind_event,
    rewind_state_delta,
)
from schemas.event import Content, Event, Part, UsageMetadata, event_to_json
from tests.unit.builders import text_event


def _event(event_id: str, timestamp: float, author: str = "agent", **fields: Any) -> Event:
    return Event.model_validate(
        {
            "id": event_id,
            "invocation_id": "inv1",
            "author": author,
            "timestamp": timestamp,
            **fields,
        }
    )


def _parts(
    event_id: str, parts: list[dict[str, Any]], author: str = "agent", **fields: Any
) -> Event:
    return _event(event_id, 100, author, content={"role": "model", "parts": parts}, **fields)


def _delta(event_id: str, invocation_id: str, delta: dict[str, Any], **fields: Any) -> Event:
    return Event.model_validate(
        {
            "id": event_id,
            "invocation_id": invocation_id,
            "author": "agent",
            "timestamp": 100,
            "actions": {"state_delta": delta},
            **fields,
        }
    )


# --------------------------------------------------------------------------- §7.1 rendering


def test_auth_events_are_skipped_entirely() -> None:
    events = [
        text_event("e1", "inv1", 100, "hello"),
        _parts(
            "auth",
            [{"text": "need creds"}, {"function_call": {"name": "adk_request_credential"}}],
        ),
        _parts(
            "cred",
            [
                {"function_response": {"name": "adk_request_credential", "response": {"t": 1}}},
                {"text": "secret"},
            ],
            author="user",
        ),
        text_event("e2", "inv1", 101, "bye", author="agent"),
    ]
    assert render_transcript(events) == "user: hello\nagent: bye"


def test_summary_event_thoughts_are_skipped_but_text_is_rendered() -> None:
    summary = _parts(
        "s",
        [{"text": "old reasoning", "thought": True}, {"text": "old summary"}],
        author="user",
        actions={
            "compaction": {
                "start_timestamp": 1,
                "end_timestamp": 2,
                "compacted_content": {"role": "model", "parts": [{"text": "c"}]},
            }
        },
    )
    raw = _parts("r", [{"text": "why", "thought": True}, {"text": "", "thought": True}])
    assert render_transcript([summary, raw]) == "user: old summary\nagent (thought): why"


def test_seed_renders_as_model_line() -> None:
    seed = text_event("seed", "fresh", 90, "Previous summary.", author="model")
    assert render_transcript([seed]) == "model: Previous summary."


def test_truncation_applies_to_tool_payloads_only() -> None:
    # str({'k': 'a' * n}) has 9 + n characters.
    exact = {"k": "a" * 1991}
    over = {"k": "a" * 1992}
    long_text = "t" * 5000
    events = [
        _parts("c1", [{"function_call": {"name": "f", "args": exact}}]),
        _parts("c2", [{"function_call": {"name": "f", "args": over}}]),
        _parts("r", [{"function_response": {"name": "g", "response": over}}], author="user"),
        text_event("t", "inv1", 101, long_text),
    ]
    lines = render_transcript(events).split("\n")
    assert lines[0] == f"agent called tool: f({exact!s})"
    assert len(str(exact)) == 2000
    truncated = str(over)[:2000] + "... [truncated 1 chars]"
    assert lines[1] == f"agent called tool: f({truncated})"
    assert lines[2] == f"Tool response from g: {truncated}"
    assert lines[3] == "user: " + long_text
    assert truncate("x" * 2500) == "x" * 2000 + "... [truncated 500 chars]"


def test_payloads_render_as_python_str_of_dicts() -> None:
    args = {"b": True, "n": None, "nested": {"l": [1, 2.5, "é"]}, "q": "it's"}
    events = [
        _parts("c", [{"function_call": {"name": "f", "args": args}}]),
        _parts("r", [{"function_response": {"name": "f", "response": {"ok": False}}}], "user"),
        _parts(
            "c0",
            [{"function_call": {"name": "ping"}}, {"function_call": {"name": "p2", "args": {}}}],
        ),
        _parts("r0", [{"function_response": {"name": "ping"}}], author="user"),
    ]
    assert render_transcript(events).split("\n") == [
        "agent called tool: f({'b': True, 'n': None, 'nested': {'l': [1, 2.5, 'é']}, "
        "'q': \"it's\"})",
        "Tool response from f: {'ok': False}",
        "agent called tool: ping(None)",
        "agent called tool: p2({})",
        "Tool response from ping: None",
    ]


def test_text_is_verbatim_and_parts_render_independently() -> None:
    events = [
        text_event("e1", "inv1", 100, "line1\nlíne2 ✓"),
        _parts("m", [{"text": "calling", "function_call": {"name": "f", "args": {"a": 1}}}]),
        _event("no_content", 101),
        _event("no_parts", 102, content={"role": "model", "parts": []}),
    ]
    assert render_transcript(events) == (
        "user: line1\nlíne2 ✓\nagent: calling\nagent called tool: f({'a': 1})"
    )


# --------------------------------------------------------------------------- §7.3 summary event


def test_summary_event_shape_and_range_from_positions() -> None:
    window = [text_event("a", "inv1", 105), text_event("b", "inv1", 100)]
    usage = UsageMetadata(prompt_token_count=12)
    event = summary_event(
        window,
        Content(role="user", parts=[Part(text="s")]),
        event_id="sid",
        invocation_id="fresh",
        timestamp=200,
        usage_metadata=usage,
        isolation_scope="task",
    )
    assert event is not None
    assert (event.author, event.content, event.invocation_id) == ("user", None, "fresh")
    assert event.usage_metadata == usage
    assert event.isolation_scope == "task"
    compaction = event.actions.compaction
    assert compaction is not None
    assert (compaction.start_timestamp, compaction.end_timestamp) == (105.0, 100.0)  # inverted
    assert compaction.compacted_content.role == "model"
    assert summary_event([], "s", event_id="x", invocation_id="y", timestamp=1) is None
    assert summary_event(window, None, event_id="x", invocation_id="y", timestamp=1) is None


def test_render_vector_shape() -> None:
    events = [
        text_event("e1", "inv1", 100, "hi"),
        _event("e2", 101, actions={"state_delta": {"k": 1}}),
        text_event("e3", "inv1", 99, "bye", author="agent"),
    ]
    result = run_render_vector({"events": [event_to_json(e) for e in events]})
    assert result == {
        "conversation_history": "user: hi\nagent: bye",
        "llm_called": True,
        "prompt_ends_with_history": True,
        "summary_event": {
            "author": "user",
            "content_is_null": True,
            "invocation_id_is_fresh": True,
            "start_timestamp": 100.0,
            "end_timestamp": 99.0,
            "compacted_content_role": "model",
            "usage_metadata_passed_through": True,
        },
    }
    empty = run_render_vector({"events": []})
    assert empty == {
        "conversation_history": "",
        "llm_called": False,
        "prompt_ends_with_history": None,  # no prompt without a call (the vectors' README)
        "summary_event": None,
    }


# --------------------------------------------------------------------------- §11 append


def test_temp_keys_reach_working_state_only() -> None:
    stores = create_session({"temp:boot": 1, "mode": "x"})
    assert stores.read_state() == {"mode": "x"}
    result = append_event(stores, stores.read_state(), _delta("e1", "inv1", {"temp:t": 2, "n": 1}))
    assert result.stored
    assert result.working_state == {"mode": "x", "temp:t": 2, "n": 1}
    assert dict(result.event.actions.state_delta) == {"n": 1}
    assert dict(result.stores.events[0].actions.state_delta) == {"n": 1}
    assert result.stores.read_state() == {"mode": "x", "n": 1}


def test_partial_event_is_neither_stored_nor_applied() -> None:
    stores = create_session({})
    partial = _delta("p", "inv1", {"n": 1, "app:a": 1}, partial=True)
    result = append_event(stores, {}, partial)
    assert not result.stored
    assert result.event is partial
    assert result.working_state == {}
    assert result.stores.events == ()
    assert result.stores.read_state() == {}


def test_equal_redelivery_is_ignored_but_changed_event_with_same_id_is_not() -> None:
    stores = create_session({})
    first = append_event(stores, {}, _delta("e1", "inv1", {"n": 1}))
    again = append_event(first.stores, first.working_state, _delta("e1", "inv1", {"n": 1}))
    assert not again.stored
    assert len(again.stores.events) == 1
    changed = append_event(again.stores, again.working_state, _delta("e1", "inv1", {"n": 2}))
    assert changed.stored
    assert changed.stores.read_state() == {"n": 2}


def test_prefixed_keys_go_to_their_stores_and_none_is_a_value() -> None:
    stores = create_session({"app:v": 1, "user:l": "en"})
    delta = {"app:v": None, "user:l": None, "k": None, "app:new": 2}
    result = append_event(stores, stores.read_state(), _delta("e1", "inv1", delta))
    after = result.stores
    assert dict(after.app_state) == {"v": None, "new": 2}
    assert dict(after.user_state) == {"l": None}
    assert dict(after.session_state) == {"k": None}
    assert after.read_state() == {"k": None, "app:v": None, "app:new": 2, "user:l": None}
    probe = create_session({}, after)
    assert probe.read_state() == {"app:v": None, "app:new": 2, "user:l": None}


# --------------------------------------------------------------------------- §10 rewind


def _stored(*events: Event) -> SessionStores:
    stores = create_session({})
    working: dict[str, Any] = {}
    for event in events:
        result = append_event(stores, working, event)
        stores, working = result.stores, result.working_state
    return stores


def test_rewind_replay_skips_prefixed_keys_and_none_deletes() -> None:
    stores = _stored(
        _delta("e1", "inv1", {"a": 1, "d": 4, "app:g": 1, "user:u": 1}),
        _delta("e2", "inv1", {"a": None, "same": 7}),
        _delta("e3", "inv2", {"a": 5, "d": 6, "app:g": 2}),
    )
    current = stores.read_state()
    assert current == {"a": 5, "d": 6, "same": 7, "app:g": 2, "user:u": 1}
    # Replay: a deleted by None, d = 4, same = 7 (unchanged: omitted);
    # a is absent from the replay -> None; app:/user: untouched.
    assert rewind_state_delta(stores.events, current, "inv2") == {"d": 4, "a": None}


def test_rewind_replays_earlier_rewind_events() -> None:
    stores = _stored(_delta("e1", "inv1", {"a": 1}), _delta("e2", "inv2", {"a": 2}))
    first = rewind_event(
        stores.events,
        stores.read_state(),
        "inv2",
        event_id="r1",
        invocation_suffix="x",
        timestamp=1,
    )
    assert dict(first.actions.state_delta) == {"a": 1}
    stores = append_event(stores, stores.read_state(), first).stores
    stores = append_event(
        stores, stores.read_state(), _delta("e3", "inv3", {"a": 3, "b": 1})
    ).stores
    # Replay before inv3: e1 a=1, e2 a=2, r1 a=1.
    delta = rewind_state_delta(stores.events, stores.read_state(), "inv3")
    assert delta == {"a": 1, "b": None}


def test_rewind_event_shape_and_unknown_invocation() -> None:
    stores = _stored(_delta("e1", "inv1", {"a": 1}), _delta("e2", "inv2", {"a": 2}))
    event = rewind_event(
        stores.events,
        stores.read_state(),
        "inv2",
        event_id="rw",
        invocation_suffix="abc",
        timestamp=5,
        artifact_delta={"f.txt": 0},
    )
    assert (event.author, event.invocation_id, event.id) == ("user", "e-abc", "rw")
    assert event.actions.rewind_before_invocation_id == "inv2"
    assert dict(event.actions.state_delta) == {"a": 1}
    assert dict(event.actions.artifact_delta) == {"f.txt": 0}
    with pytest.raises(InvocationNotFoundError):
        rewind_state_delta(stores.events, stores.read_state(), "nope")


def test_session_state_vector_with_rewind_and_probe() -> None:
    events = [
        _delta("e1", "inv1", {"a": 1, "app:g": 1, "user:u": 1}),
        _delta("e2", "inv1", {"p": 1}, partial=True),
        _delta("e3", "inv2", {"a": 2, "b": None, "user:u": 2}),
        _delta("e3", "inv2", {"a": 2, "b": None, "user:u": 2}),
    ]
    result = run_state_vector(
        {
            "initial_state": {"init": 0, "app:v": 1, "temp:boot": True},
            "events": [event_to_json(e) for e in events],
            "rewind_before_invocation_id": "inv2",
            "probe_new_session": True,
        }
    )
    rewind_delta = {"a": 1, "b": None, "init": None}
    assert result == {
        "state_after_create": {"init": 0, "app:v": 1},
        "appended_event_ids": ["e1", "e3"],
        "working_session_state": {
            "init": None,
            "a": 1,
            "b": None,
            "app:v": 1,
            "app:g": 1,
            "user:u": 2,
        },
        "stored_session_state": {
            "init": None,
            "a": 1,
            "b": None,
            "app:v": 1,
            "app:g": 1,
            "user:u": 2,
        },
        "app_state": {"v": 1, "g": 1},
        "user_state": {"u": 2},
        "stored_event_state_deltas": {
            "e1": {"a": 1, "app:g": 1, "user:u": 1},
            "e3": {"a": 2, "b": None, "user:u": 2},
            "REWIND": rewind_delta,
        },
        "rewind_event": {
            "author": "user",
            "rewind_before_invocation_id": "inv2",
            "state_delta": rewind_delta,
            "invocation_id_prefix": "e-",
        },
        "new_session_state": {"app:v": 1, "app:g": 1, "user:u": 2},
    }


def test_session_state_vector_temp_keys_without_rewind() -> None:
    events = [_delta("e1", "inv1", {"temp:t": 1, "k": 1}), _delta("e2", "inv1", {"temp:t": 2})]
    result = run_state_vector(
        {
            "initial_state": {},
            "events": [event_to_json(e) for e in events],
            "rewind_before_invocation_id": None,
        }
    )
    assert result["working_session_state"] == {"temp:t": 2, "k": 1}
    assert result["stored_session_state"] == {"k": 1}
    assert result["stored_event_state_deltas"] == {"e1": {"k": 1}, "e2": {}}
    assert result["rewind_event"] is None
    assert result["new_session_state"] is None
