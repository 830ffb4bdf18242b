"""The size gate (reference §3.5), case by case from the reference text.

Expected values are worked out by hand from the reference (comments show the arithmetic).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from projections.compaction.size_gate import content_json_size, event_json_size, is_worth_compacting
from schemas.event import Content, Part
from tests.support.events import (
    bare_event,
    summary_event,
    text_event,
)

# --------------------------------------------------------------------------- §3.5 size gate


def _compact_json_length(value: dict[str, Any]) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def test_content_size_is_compact_snake_case_json_without_nones() -> None:
    assert content_json_size(Content(role="user", parts=[Part(text="hi")])) == 39
    assert content_json_size(Content(role="model", parts=[])) == 27
    # Non-ASCII is not escaped: "é" is one character.
    assert content_json_size(Content(role="user", parts=[Part(text="é")])) == 38
    content = Content.model_validate(
        {
            "role": "model",
            "parts": [
                {"text": "t", "thought": True, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "f", "args": {"k": "ü", "n": [1, None]}}},
                {"functionResponse": {"id": "r1", "name": "f", "response": {"ok": True}}},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            ],
        }
    )
    expected = {
        "parts": [
            {"text": "t", "thought": True, "thought_signature": "c2ln"},
            {"function_call": {"name": "f", "args": {"k": "ü", "n": [1, None]}}},
            {"function_response": {"id": "r1", "name": "f", "response": {"ok": True}}},
            {"inline_data": {"mime_type": "image/png", "data": "AAAA"}},
        ],
        "role": "model",
    }
    assert content_json_size(content) == _compact_json_length(expected)


def test_event_size_uses_compacted_content_for_summaries_and_zero_without_content() -> None:
    assert event_json_size(summary_event("s", 1, 2, 3, "abc")) == 41  # 38 + 3
    assert event_json_size(bare_event("e", "i", 1)) == 0
    assert event_json_size(text_event("e", "i", 1, "abc")) == 40


def test_gate_is_strictly_greater_than_previous_summary_size() -> None:
    # Previous summary "s": 39 characters. Window [e1] with n text characters:
    # removable = (37 + n) - 27 = 10 + n, so it passes iff n > 29.
    for length, passes in ((29, False), (30, True)):
        live = [summary_event("p", 50, 60, 61, "s"), text_event("e1", "i", 100, "x" * length)]
        assert is_worth_compacting(live, live[1:]) is passes


def test_gate_without_previous_summary_needs_more_than_27_characters() -> None:
    window = [text_event("e1", "i", 100, "")]  # 37 characters: 37 - 27 = 10 > 0
    assert is_worth_compacting(window, window)
    content_less = [bare_event("e1", "i", 100), bare_event("e2", "i", 101)]
    assert not is_worth_compacting(content_less, content_less)


def test_gate_weightless_summary_spans_the_window_time_range() -> None:
    # e2 is not in the window but lies inside [min, max] of its timestamps, so
    # it counts as removed; e3 after the span does not.
    live = [
        text_event("e1", "i", 100, "a"),
        text_event("e2", "i", 101, "x" * 40),
        text_event("e3", "i", 102, "y" * 400),
        text_event("e4", "i", 103, "b"),
        summary_event("p", 10, 20, 104, "z" * 120),  # 158 characters
    ]
    window = [live[3], live[0]]  # span [100, 103], order irrelevant
    # removable = 38 + 77 + 437 + 38 - 27 = 563 > 158
    assert is_worth_compacting(live, window)
    narrow = [live[0], live[1]]  # span [100, 101]: 38 + 77 - 27 = 88 <= 158
    assert not is_worth_compacting(live, narrow)


def test_gate_seed_swallows_previous_summary_unless_window_is_content_less() -> None:
    previous = summary_event("p", 100, 100, 101, "L" * 500)
    seed = text_event("seed", "fresh", 100, "L" * 500, author="model")
    live = [text_event("e1", "i", 100), previous, text_event("e3", "i", 102)]
    # removable = (538 + 38) - 27 > 538
    assert is_worth_compacting(live, [seed, live[2]])
    empty = [text_event("e1", "i", 100), previous, bare_event("e3", "i", 102)]
    # removable = 538 - 27 < 538
    assert not is_worth_compacting(empty, [seed, empty[2]])


def test_content_size_renames_unmodelled_genai_fields_but_not_payload_keys() -> None:
    content = Content.model_validate(
        {
            "role": "model",
            "parts": [
                {"videoMetadata": {"startOffset": "1s"}, "text": "v"},
                {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
                {"toolCall": {"toolType": "X", "args": {"fooBar": 1}}},
                {"functionResponse": {"name": "f", "response": {"aB": 1}, "willContinue": True}},
                {"functionCall": {"name": "f", "args": {"someKey": 1.5}}},
            ],
        }
    )
    expected = {
        "role": "model",
        "parts": [
            {"video_metadata": {"start_offset": "1s"}, "text": "v"},
            {"executable_code": {"code": "print(1)", "language": "PYTHON"}},
            {"tool_call": {"tool_type": "X", "args": {"fooBar": 1}}},
            {"function_response": {"name": "f", "response": {"aB": 1}, "will_continue": True}},
            {"function_call": {"name": "f", "args": {"someKey": 1.5}}},
        ],
    }
    assert content_json_size(content) == _compact_json_length(expected)


@pytest.mark.parametrize(
    ("wire", "snake"),
    [
        ("executableCode", "executable_code"),
        ("codeExecutionResult", "code_execution_result"),
        ("toolCall", "tool_call"),
        ("toolResponse", "tool_response"),
    ],
)
def test_content_size_renames_the_keys_of_a_genai_object_alone_in_its_part(
    wire: str, snake: str
) -> None:
    # The object is kept as it arrived (camelCase keys); genai dumps its keys in snake_case.
    content = Content.model_validate(
        {"role": "model", "parts": [{wire: {"newerField": {"innerKey": 1}}}]}
    )
    expected = {"role": "model", "parts": [{snake: {"newer_field": {"inner_key": 1}}}]}
    assert content_json_size(content) == _compact_json_length(expected)


@pytest.mark.parametrize(
    ("part", "expected_part"),
    [
        (
            {"functionCall": {"name": "f", "args": {}, "willContinue": True}},
            {"function_call": {"name": "f", "args": {}, "will_continue": True}},
        ),
        (
            {"functionResponse": {"name": "f", "response": {}, "willContinue": True}},
            {"function_response": {"name": "f", "response": {}, "will_continue": True}},
        ),
        (
            {"inlineData": {"mimeType": "image/png", "data": "aGk=", "newerField": 1}},
            {"inline_data": {"mime_type": "image/png", "data": "aGk=", "newer_field": 1}},
        ),
        (
            {"fileData": {"fileUri": "gs://b/f", "newerField": 1}},
            {"file_data": {"file_uri": "gs://b/f", "newer_field": 1}},
        ),
    ],
)
def test_content_size_renames_an_unmodelled_field_of_a_call_response_or_media(
    part: dict[str, Any], expected_part: dict[str, Any]
) -> None:
    content = Content.model_validate({"role": "model", "parts": [part]})
    expected = {"role": "model", "parts": [expected_part]}
    assert content_json_size(content) == _compact_json_length(expected)
