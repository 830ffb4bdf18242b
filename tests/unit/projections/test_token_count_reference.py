"""Recorded and estimated prompt token counts (reference §3.6), case by case.

Each case is built from the reference text.

Expected values are worked out by hand from the reference (comments show the arithmetic).
"""

from __future__ import annotations

from typing import Any

from projections.compaction.masking import (
    surviving_summary_positions,
)
from projections.compaction.token_count import (
    content_characters,
    estimated_prompt_token_count,
    observed_prompt_token_count,
    recorded_prompt_token_count,
)
from schemas.event import Content, FunctionCall, FunctionResponse, Part
from tests.support.events import (
    bare_event,
    parts_event,
    summary_event,
    text_event,
)

# --------------------------------------------------------------------------- §3.6 token count


def _usage(count: int) -> dict[str, Any]:
    return {"usage_metadata": {"prompt_token_count": count}}


def test_recorded_count_scan_stops_at_any_summary_even_subsumed() -> None:
    base = [
        summary_event("wide", 100, 105, 106),
        text_event("e1", "i", 107, author="agent", **_usage(500)),
    ]
    assert recorded_prompt_token_count(base, agent_name="", isolation_scope=None) == 500
    events = [*base, summary_event("narrow", 100, 101, 108), text_event("e2", "i", 109)]
    assert surviving_summary_positions(events) == [0]
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope=None) is None


def test_recorded_count_agent_filter_still_stops_at_summaries() -> None:
    events = [
        text_event("e1", "i", 100, author="worker", **_usage(5000)),
        summary_event("s", 90, 95, 101),
        text_event("e3", "i", 102, author="formatter", **_usage(100)),
    ]
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope=None) == 100
    assert recorded_prompt_token_count(events, agent_name="worker", isolation_scope=None) is None
    without_summary = [events[0], events[2]]
    assert (
        recorded_prompt_token_count(without_summary, agent_name="worker", isolation_scope=None)
        == 5000
    )


def test_recorded_count_reads_only_the_given_scope() -> None:
    events = [
        text_event("e1", "i", 100, author="agent", **_usage(300)),
        summary_event("s", 90, 95, 101, isolation_scope="task"),
        text_event("e2", "i", 102, author="agent", isolation_scope="task", **_usage(999)),
    ]
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope=None) == 300
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope="task") == 999
    assert recorded_prompt_token_count(events[:2], agent_name="", isolation_scope="task") is None


def test_characters_count_thoughts_names_and_ascii_json() -> None:
    content = Content(
        role="model",
        parts=[
            Part(text="abc", thought=True),
            Part(function_call=FunctionCall(name="fn", args={"a": 1, "b": "é"})),
        ],
    )
    # 3 + 2 + len('{"a": 1, "b": "\\u00e9"}') = 3 + 2 + 23
    assert content_characters([content]) == 28
    astral = Content(parts=[Part(function_call=FunctionCall(name="f", args={"e": "😀"}))])
    assert content_characters([astral]) == 1 + len('{"e": "\\ud83d\\ude00"}')  # 1 + 21


def test_characters_skip_empty_args_and_count_responses() -> None:
    parts = [
        Part(function_call=FunctionCall(name="ping", args={})),
        Part(function_call=FunctionCall(name="ping")),
        Part(function_response=FunctionResponse(name="r", response={"k": [1, 2]})),
        Part(function_response=FunctionResponse(name="rr", response={})),
    ]
    # 4 + 4 + (1 + len('{"k": [1, 2]}')) + 2
    assert content_characters([Content(parts=parts)]) == 4 + 4 + 14 + 2


def test_characters_fall_back_to_str_when_not_json_serializable() -> None:
    content = Content(parts=[Part(function_call=FunctionCall(name="f", args={"s": {1}}))])
    assert content_characters([content]) == 1 + len("{'s': {1}}")


def test_estimate_is_none_without_countable_characters() -> None:
    events = [bare_event("e1", "i", 100), bare_event("e2", "i", 101)]
    assert observed_prompt_token_count(events) is None


def test_estimate_skips_thought_only_events_but_counts_own_thoughts() -> None:
    events = [
        text_event("e1", "i", 100, "x" * 20),
        parts_event("t", "i", 101, [{"text": "z" * 40, "thought": True}]),
        text_event("e2", "i", 102, "y" * 20, author="agent"),
    ]
    assert estimated_prompt_token_count(
        events, agent_name="agent", current_branch=None, isolation_scope=None
    ) == (40 // 4)
    mixed = [
        text_event("e1", "i", 100, "x" * 20),
        parts_event("m", "i", 101, [{"text": "t" * 8, "thought": True}, {"text": "y" * 20}]),
    ]
    assert estimated_prompt_token_count(
        mixed, agent_name="agent", current_branch=None, isolation_scope=None
    ) == (48 // 4)


def test_counts_before_a_summary_are_ignored_and_the_estimate_sees_it() -> None:
    events = [
        text_event("e1", "i", 100, "a" * 8),
        text_event("e2", "i", 101, "b", author="agent", **_usage(999)),
        summary_event("s", 100, 101, 102, "s" * 40),
        text_event("e3", "i2", 103, "q" * 8),
    ]
    # Visible: the summary (40) and e3 (8): 48 // 4.
    assert observed_prompt_token_count(events) == 12


def test_estimate_sees_the_other_agent_preamble_per_foreign_event() -> None:
    begin, end = "<<<BEGIN_QUOTED_AGENT_CONTENT>>>", "<<<END_QUOTED_AGENT_CONTENT>>>"
    events = [
        text_event("u", "i", 100, "u" * 8),
        text_event("b1", "i", 101, "s" * 10, author="b"),
        text_event("b2", "i", 102, "t" * 10, author="b"),
    ]
    quoted = len(f"[b] said:\n{begin}\n{'s' * 10}\n{end}")
    characters = 8 + 2 * (409 + quoted)
    assert estimated_prompt_token_count(
        events, agent_name="a", current_branch=None, isolation_scope=None
    ) == (characters // 4)
    # Without an agent name nothing is rewritten: 8 + 10 + 10.
    assert observed_prompt_token_count(events) == 28 // 4
