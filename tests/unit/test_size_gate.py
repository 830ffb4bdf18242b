from __future__ import annotations

from projections.size_gate import content_json_size, event_json_size, is_worth_compacting
from schemas.event import Content, Event
from tests.unit.builders import summary_event, text_event


def test_content_json_size_matches_the_reference_example() -> None:
    content = Content.model_validate({"parts": [{"text": "hi"}], "role": "user"})
    assert content_json_size(content) == len('{"parts":[{"text":"hi"}],"role":"user"}')


def test_content_json_size_keeps_non_ascii_unescaped() -> None:
    content = Content.model_validate({"parts": [{"text": "héé"}], "role": "user"})
    assert content_json_size(content) == 40  # not 50 as with \u00e9 escapes


def test_content_json_size_uses_snake_case_names() -> None:
    content = Content.model_validate(
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}
    )
    assert content_json_size(content) == len(
        '{"parts":[{"function_call":{"name":"f","args":{}}}],"role":"model"}'
    )


def test_summary_event_counts_its_compacted_content() -> None:
    summary = summary_event("s", 1, 2, 3, text="abc")
    assert event_json_size(summary) == len('{"parts":[{"text":"abc"}],"role":"model"}')
    assert event_json_size(Event(author="a", timestamp=1)) == 0


def test_content_less_window_never_passes() -> None:
    live = [
        Event.model_validate({"author": "a", "timestamp": 1, "actions": {"state_delta": {"a": 1}}}),
        Event.model_validate({"author": "a", "timestamp": 2, "actions": {"state_delta": {"b": 2}}}),
    ]
    assert not is_worth_compacting(live, live)


def test_first_window_passes_once_it_exceeds_27_characters() -> None:
    live = [text_event("e1", "i", 1, "hi")]  # 39 characters
    assert is_worth_compacting(live, live)


def test_refused_while_removable_is_not_above_previous_summary_size() -> None:
    previous = summary_event("s", 100, 101, 102, text="p" * 200)
    live = [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101),
        previous,
        text_event("e3", "i2", 103, "q"),
        text_event("e4", "i2", 104, "a"),
    ]
    # Removable = 2 * 38 - 27 = 49, previous summary is larger.
    assert not is_worth_compacting(live, live[3:])


def test_window_range_is_min_to_max_timestamp() -> None:
    live = [text_event("e1", "i", 105, "x" * 50), text_event("e2", "i", 100, "y" * 50)]
    # Stream order 105, 100: the weightless summary still spans [100, 105].
    assert is_worth_compacting(live, live)
    assert is_worth_compacting(live, [live[1], live[0]])
