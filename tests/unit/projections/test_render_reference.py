"""The summarizer's transcript and the summary event (reference §7.1, §7.3).

Each case is built from the reference text.

Scenarios run either directly or as vector-shaped inputs through the
conformance adapter; expected values are worked out by hand.
"""

from __future__ import annotations

from typing import Any

from projections.compaction.render import render_transcript, summary_event, truncate
from projections.conformance.summarizer_render import run as run_render_vector
from schemas.event import Content, Event, Part, UsageMetadata, event_to_json
from tests.support.events import text_event


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
