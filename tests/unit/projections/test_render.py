from __future__ import annotations

from typing import Any

from projections.compaction.render import build_prompt, render_transcript, summary_event, truncate
from schemas.event import Content, Event, UsageMetadata
from tests.support.events import call_event, text_event
from tests.support.events import summary_event as stored_summary


def _event(parts: list[dict[str, Any]], author: str = "agent", **fields: Any) -> Event:
    data: dict[str, Any] = {
        "author": author,
        "timestamp": 1.0,
        "content": {"role": "model", "parts": parts},
    }
    data.update(fields)
    return Event.model_validate(data)


def test_truncate_keeps_exactly_2000_and_cuts_2001() -> None:
    assert truncate("a" * 2000) == "a" * 2000
    assert truncate("a" * 2001) == "a" * 2000 + "... [truncated 1 chars]"
    assert truncate("b" * 2500) == "b" * 2000 + "... [truncated 500 chars]"


def test_long_tool_arguments_are_truncated() -> None:
    event = _event([{"function_call": {"name": "f", "args": {"k": "v" * 3000}}}])
    rendered = str({"k": "v" * 3000})
    expected = (
        f"agent called tool: f({rendered[:2000]}... [truncated {len(rendered) - 2000} chars])"
    )
    assert render_transcript([event]) == expected


def test_text_is_verbatim_with_newlines_and_non_ascii() -> None:
    event = _event([{"text": "line 1\nzweite Zeile: ä\u4e2d"}], author="user")
    assert render_transcript([event]) == "user: line 1\nzweite Zeile: ä\u4e2d"


def test_call_and_text_in_one_part_render_both_lines() -> None:
    event = _event([{"text": "calling", "function_call": {"name": "f", "args": {"a": True}}}])
    assert render_transcript([event]) == "agent: calling\nagent called tool: f({'a': True})"


def test_empty_thought_renders_nothing_and_empty_parts_are_skipped() -> None:
    events = [
        _event([{"text": "", "thought": True}]),
        _event([]),
        Event(author="x", timestamp=2.0),
        _event([{"text": "kept"}]),
    ]
    assert render_transcript(events) == "agent: kept"


def test_credential_request_events_are_skipped_entirely() -> None:
    events = [
        _event([{"text": "secret"}, {"function_call": {"name": "adk_request_credential"}}]),
        _event([{"function_response": {"name": "adk_request_credential", "response": {}}}]),
        call_event("c", "i", 3, "x", name="lookup"),
    ]
    assert render_transcript(events) == "agent called tool: lookup({})"


def test_thoughts_of_a_summary_event_are_not_rendered() -> None:
    summary = _event(
        [{"text": "why", "thought": True}, {"text": "what"}],
        actions={
            "compaction": {
                "start_timestamp": 1,
                "end_timestamp": 2,
                "compacted_content": {"role": "model", "parts": []},
            }
        },
    )
    assert render_transcript([summary]) == "agent: what"


def test_prompt_ends_with_blank_line_and_history() -> None:
    assert build_prompt("user: hi").endswith("\n\nuser: hi")
    assert build_prompt("h", template="T:\n\n{conversation_history}") == "T:\n\nh"


def test_summary_event_range_follows_positions_even_when_inverted() -> None:
    window = [text_event("a", "i", 105), text_event("b", "i", 100)]
    usage = UsageMetadata(prompt_token_count=12)
    event = summary_event(
        window, "done", event_id="s", invocation_id="fresh", timestamp=200.0, usage_metadata=usage
    )
    assert event is not None
    assert event.author == "user"
    assert event.content is None
    assert event.usage_metadata == usage
    compaction = event.actions.compaction
    assert compaction is not None
    assert (compaction.start_timestamp, compaction.end_timestamp) == (105.0, 100.0)
    assert compaction.compacted_content.role == "model"


def test_summary_content_role_is_forced_to_model() -> None:
    content = Content.model_validate({"role": "user", "parts": [{"text": "s"}]})
    event = summary_event(
        [text_event("a", "i", 1)], content, event_id="s", invocation_id="f", timestamp=2
    )
    assert event is not None
    assert event.actions.compaction is not None
    assert event.actions.compaction.compacted_content.role == "model"


def test_no_summary_for_empty_window_or_missing_content() -> None:
    window = [text_event("a", "i", 1)]
    assert summary_event([], "x", event_id="s", invocation_id="f", timestamp=2) is None
    assert summary_event(window, None, event_id="s", invocation_id="f", timestamp=2) is None


def test_seed_renders_as_model_line() -> None:
    seed = _event([{"text": "Earlier summary."}], author="model")
    assert render_transcript([seed, stored_summary("s", 1, 2, 3)]) == "model: Earlier summary."
