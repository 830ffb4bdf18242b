"""Spec audit of the shared compaction building blocks (reference §3.1-§3.6).

Every scenario is built from the reference text; the expected values are
worked out by hand from it (comments show the arithmetic).
"""

from __future__ import annotations

import json
import math
from typing import Any

from projections.masking import (
    latest_summary,
    latest_summary_end,
    mask_compacted,
    surviving_summary_positions,
)
from projections.obligations import self_contained_prefix, strict_prefix_length
from projections.rewind import drop_rewound
from projections.size_gate import content_json_size, event_json_size, is_worth_compacting
from projections.token_count import (
    content_characters,
    estimated_prompt_token_count,
    observed_prompt_token_count,
    recorded_prompt_token_count,
)
from schemas.event import Content, Event, FunctionCall, FunctionResponse, Part
from tests.unit.builders import bare_event, call_event, ids, rewind_event, summary_event, text_event


def _parts_event(
    event_id: str, invocation_id: str, timestamp: float, parts: list[dict[str, Any]], **fields: Any
) -> Event:
    return bare_event(
        event_id, invocation_id, timestamp, content={"role": "model", "parts": parts}, **fields
    )


def _call(call_id: str, name: str = "tool") -> dict[str, Any]:
    return {"function_call": {"id": call_id, "name": name, "args": {}}}


def _response(call_id: str, name: str = "tool") -> dict[str, Any]:
    return {"function_response": {"id": call_id, "name": name, "response": {"ok": 1}}}


def _placeholder(event_id: str, invocation_id: str, timestamp: float, call_id: str) -> Event:
    """ADK's placeholder: answers `call_id` and requests confirmation for it."""
    return _parts_event(
        event_id,
        invocation_id,
        timestamp,
        [_response(call_id)],
        actions={"requested_tool_confirmations": {call_id: {"hint": "ok?"}}},
    )


def _labels(events: list[Event]) -> list[str]:
    return [f"S:{e.id}" if e.actions.compaction is not None else e.id for e in events]


# --------------------------------------------------------------------------- §3.1 rewind


def test_rewind_drops_target_span_and_itself() -> None:
    events = [
        text_event("a1", "a", 1),
        text_event("b1", "b", 2),
        text_event("b2", "b", 3),
        rewind_event("r", "b", 4),
        text_event("c1", "c", 5),
    ]
    assert ids(drop_rewound(events)) == ["a1", "c1"]


def test_rewind_to_unknown_or_later_invocation_drops_only_the_rewind() -> None:
    unknown = [text_event("a1", "a", 1), rewind_event("r", "zzz", 2), text_event("a2", "a", 3)]
    assert ids(drop_rewound(unknown)) == ["a1", "a2"]
    later = [text_event("a1", "a", 1), rewind_event("r", "b", 2), text_event("b1", "b", 3)]
    assert ids(drop_rewound(later)) == ["a1", "b1"]


def test_rewind_to_its_own_invocation_drops_only_itself() -> None:
    # The target's first index (the rewind itself) is not strictly smaller.
    own = bare_event("r", "x", 2, actions={"rewind_before_invocation_id": "x"})
    events = [text_event("a1", "a", 1), own, text_event("a2", "a", 3)]
    assert ids(drop_rewound(events)) == ["a1", "a2"]


def test_rewind_inside_an_annulled_span_has_no_effect() -> None:
    # R1 (to a) sits inside the span R2 (to b) annuls, so a1 survives.
    events = [
        text_event("a1", "a", 1),
        text_event("b1", "b", 2),
        rewind_event("r1", "a", 3),
        text_event("c1", "c", 4),
        rewind_event("r2", "b", 5),
        text_event("d1", "d", 6),
    ]
    assert ids(drop_rewound(events)) == ["a1", "d1"]


def test_rewound_summary_vanishes_and_its_raw_events_reappear() -> None:
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv1", 101, author="agent"),
        text_event("e3", "inv2", 102),
        summary_event("s", 100, 101, 103),
        rewind_event("r", "inv2", 104),
        text_event("e4", "inv3", 105),
    ]
    assert _labels(mask_compacted(events[:4], "")) == ["S:s", "e3"]
    live = drop_rewound(events)
    assert ids(live) == ["e1", "e2", "e4"]
    assert _labels(mask_compacted(live, "")) == ["e1", "e2", "e4"]


# --------------------------------------------------------------------------- §3.2 survivors


def test_nan_bound_always_survives_and_never_hides() -> None:
    nan = math.nan
    events = [summary_event("n", 90, nan, 1), summary_event("a", 100, 101, 2)]
    assert surviving_summary_positions(events) == [0, 1]
    # A containing range does not hide a NaN-bounded one either.
    events += [summary_event("w", 0, 1000, 3), summary_event("m", nan, 101, 4)]
    assert surviving_summary_positions(events) == [0, 2, 3]


def test_nan_bounded_latest_summary_has_nan_end() -> None:
    events = [summary_event("w", 0, 1000, 3), summary_event("n", 90, math.nan, 4)]
    latest = latest_summary(events)
    assert latest is not None
    assert latest.id == "n"
    assert math.isnan(latest_summary_end(events))


def test_nan_range_hides_nothing_but_is_shown_at_its_end() -> None:
    events = [text_event("e1", "i", 100), summary_event("n", math.nan, 105, 106)]
    assert _labels(mask_compacted(events, "")) == ["e1", "S:n"]


def test_nan_end_summary_keeps_its_place_before_raw_events() -> None:
    # A NaN key compares neither less nor greater, so the stable sort keeps
    # the initial order: summaries first, then raw events (as ADK builds it).
    events = [
        text_event("e1", "i", 100),
        summary_event("n", 90, math.nan, 101),
        text_event("e2", "i", 102),
    ]
    assert _labels(mask_compacted(events, "")) == ["S:n", "e1", "e2"]


def test_inverted_ranges_take_part_in_subsumption() -> None:
    wide = [summary_event("inv", 105, 100, 1), summary_event("w", 100, 110, 2)]
    assert surviving_summary_positions(wide) == [1]
    # [104, 101] contains [105, 100]: 104 <= 105 and 101 >= 100.
    nested = [summary_event("outer", 105, 100, 1), summary_event("inner", 104, 101, 2)]
    assert surviving_summary_positions(nested) == [1]


def test_identical_ranges_last_appended_survives() -> None:
    events = [
        summary_event("s1", 100, 101, 102, "first"),
        summary_event("s2", 100, 101, 103, "second"),
    ]
    assert surviving_summary_positions(events) == [1]
    shown = mask_compacted(events, "agent")
    assert len(shown) == 1
    assert shown[0].content is not None
    assert shown[0].content.parts is not None
    assert shown[0].content.parts[0].text == "second"


def test_latest_summary_is_last_survivor_not_widest_nor_last_appended() -> None:
    events = [
        summary_event("wide", 100, 105, 106),
        summary_event("part", 103, 108, 109),
        summary_event("narrow", 101, 102, 110),  # contained in "wide": not a survivor
    ]
    assert surviving_summary_positions(events) == [0, 1]
    latest = latest_summary(events)
    assert latest is not None
    assert latest.id == "part"
    assert latest_summary_end(events) == 108.0
    assert latest_summary_end([text_event("e", "i", 1)]) == 0.0


# --------------------------------------------------------------------------- §3.3 masking


def test_inverted_range_hides_nothing_and_shows_at_end_time() -> None:
    events = [
        text_event("e1", "i", 100),
        text_event("e2", "i", 103),
        text_event("e3", "i", 105),
        summary_event("s", 105, 100, 106),
    ]
    # Sorted by (timestamp, position): e1 (100, 0), S (100, 3), e2, e3.
    assert _labels(mask_compacted(events, "")) == ["e1", "S:s", "e2", "e3"]


def test_late_summary_hides_only_its_range() -> None:
    events = [
        text_event("e1", "i", 100),
        text_event("e2", "i", 101),
        text_event("e3", "i", 102),
        summary_event("s", 100, 101, 103),
    ]
    assert _labels(mask_compacted(events, "")) == ["S:s", "e3"]


def test_any_summary_resorts_raw_events_by_timestamp() -> None:
    raw = [text_event("e1", "i", 105), text_event("e2", "i", 100)]
    assert _labels(mask_compacted(raw, "")) == ["e1", "e2"]  # no summary: stream order
    events = [*raw, summary_event("s", 10, 20, 106)]
    assert _labels(mask_compacted(events, "")) == ["S:s", "e2", "e1"]


def test_masking_bounds_are_inclusive_and_union_is_merged() -> None:
    events = [
        text_event("before", "i", 99.5),
        text_event("at_start", "i", 100),
        text_event("gap", "i", 103),
        text_event("at_end", "i", 104),
        text_event("after", "i", 104.5),
        summary_event("a", 100, 102, 105),
        summary_event("b", 101, 104, 106),
    ]
    assert _labels(mask_compacted(events, "")) == ["before", "S:a", "S:b", "after"]


def test_materialized_summary_shape() -> None:
    summary = summary_event(
        "s", 100, 101, 150, "text", branch="root.a", isolation_scope="sc", invocation_id="cmp"
    )
    for agent, author in (("helper", "helper"), ("", "model")):
        (shown,) = mask_compacted([summary], agent)
        assert shown.author == author
        assert shown.timestamp == 101.0
        assert shown.branch == "root.a"
        assert shown.isolation_scope == "sc"
        assert shown.invocation_id == "cmp"
        assert shown.content is not None
        assert shown.content.role == "model"
        assert shown.actions.compaction is not None


# --------------------------------------------------------------------------- §3.4 obligations


def test_response_before_open_in_one_event_leaves_the_id_open() -> None:
    window = [call_event("c", "inv1", 100, "x"), _placeholder("p", "inv1", 101, "x")]
    assert strict_prefix_length(window) == 0


def test_confirmation_request_first_without_call_blocks_everything() -> None:
    window = [
        _placeholder("p", "inv1", 100, "x"),
        text_event("q2", "inv2", 101),
        text_event("q3", "inv3", 102),
    ]
    assert self_contained_prefix(window, window) == []


def test_long_running_call_of_older_invocation_is_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "lr", long_running_tool_ids=["lr"]),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1"]


def test_long_running_client_call_of_older_invocation_is_dead() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "lr", "adk_request_input", long_running_tool_ids=["lr"]),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "q2"]


def test_long_running_client_call_of_newest_invocation_is_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("q2", "inv2", 101),
        call_event("c", "inv2", 102, "lr", "adk_request_input", long_running_tool_ids=["lr"]),
        text_event("a2", "inv2", 103, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "q2"]


def test_calls_of_newest_invocation_are_never_dead() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="agent"),
        text_event("q2", "inv2", 102),
        call_event("c", "inv2", 103, "x"),
        text_event("a2", "inv2", 104, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "a1", "q2"]
    # Once a newer invocation exists, the same call is dead.
    live = [*window, text_event("q3", "inv3", 105)]
    assert ids(self_contained_prefix(window, live)) == ids(window)


def test_dead_call_opening_an_invocation_blocks_at_that_boundary() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="agent"),
        call_event("c", "inv2", 102, "x"),
        text_event("a2", "inv2", 103, author="agent"),
        text_event("q3", "inv3", 104),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "a1"]


def test_call_answered_outside_the_window_is_not_dead() -> None:
    window = [text_event("q1", "inv1", 100), call_event("c", "inv1", 101, "x")]
    window.append(text_event("q2", "inv2", 102))
    live = [
        *window,
        _parts_event("r", "inv3", 103, [_response("x")]),
        text_event("q3", "inv3", 104),
    ]
    assert ids(self_contained_prefix(window, live)) == ["q1"]


def test_placeholder_response_does_not_answer_its_own_request() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "x"),
        _placeholder("p", "inv1", 102, "x"),
        text_event("q2", "inv2", 103),
    ]
    # Answered = {x} - {x}: x is dead, ignored for the call and the request key.
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "p", "q2"]


def test_request_keys_of_newest_invocation_are_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "x"),
        text_event("q2", "inv2", 102),
        _placeholder("p", "inv2", 103, "x"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1"]
    # An event without invocation id protects its request keys as well.
    anonymous = [*window[:3], _placeholder("p", "", 103, "x"), text_event("q3", "inv3", 104)]
    assert ids(self_contained_prefix(anonymous, anonymous)) == ["q1"]


def test_dead_ids_are_ignored_for_request_keys_too() -> None:
    window = [
        text_event("q1", "inv1", 100),
        _parts_event(
            "c",
            "inv1",
            101,
            [_call("x")],
            actions={"requested_tool_confirmations": {"x": {"hint": "?"}}},
        ),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "q2"]


def test_closing_one_call_does_not_help_while_another_stays_open() -> None:
    window = [
        text_event("q", "inv1", 100),
        _parts_event("c", "inv1", 101, [_call("a"), _call("b")]),
        _parts_event("r", "inv1", 102, [_response("a")]),
        text_event("t", "inv1", 103, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q"]


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
        _parts_event("t", "i", 101, [{"text": "z" * 40, "thought": True}]),
        text_event("e2", "i", 102, "y" * 20, author="agent"),
    ]
    assert estimated_prompt_token_count(
        events, agent_name="agent", current_branch=None, isolation_scope=None
    ) == (40 // 4)
    mixed = [
        text_event("e1", "i", 100, "x" * 20),
        _parts_event("m", "i", 101, [{"text": "t" * 8, "thought": True}, {"text": "y" * 20}]),
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
