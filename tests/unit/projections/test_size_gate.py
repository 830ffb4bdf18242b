from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.rolling_seed import seed_event
from projections.compaction.size_gate import (
    content_json_size,
    event_json_size,
    is_worth_compacting,
    previous_summary_size,
    removable_size,
    renamed_content_json_size,
    worth_compacting,
)
from projections.event_kinds import is_summary
from projections.fold.rewind import drop_rewound
from schemas.event import Content, Event
from schemas.logged_event import LoggedEvent
from tests.support.events import summary_event, text_event
from tests.support.strategies import armed_sessions, sessions


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


def test_a_removable_of_one_character_passes_without_a_previous_summary() -> None:
    # A role-less content of 28 characters: removable = 28 - 27 = 1 > 0.
    content = Content.model_validate({"parts": [{"text": "abcde"}]})
    assert content_json_size(content) == len('{"parts":[{"text":"abcde"}]}') == 28
    live = [Event(author="user", timestamp=1, content=content)]
    assert is_worth_compacting(live, live)


def test_the_renaming_walk_writes_non_finite_numbers_as_null() -> None:
    # The wire accepts NaN in a field the schema does not model; JSON has no NaN,
    # and pydantic's JSON serializer (genai's) writes null for it.
    content = Content.model_validate_json('{"role":"user","x":NaN}')
    assert renamed_content_json_size(content) == len('{"role":"user","x":null}')
    assert content_json_size(content) == len('{"role":"user","x":null}')


def test_the_renaming_walk_keeps_a_lower_case_extra_name() -> None:
    # Nothing to rename in a lower-case name, whatever its letters: "ß" stays one character.
    content = Content.model_validate_json('{"role":"user","straße":1}')
    assert renamed_content_json_size(content) == len('{"role":"user","straße":1}') == 26


# -- the running-sum gate against the reference ----------------------------------------

EXAMPLES = 150


def _cached(live: list[Event]) -> Callable[[Event], int]:
    """Sizes measured once, looked up by identity, as the projection keeps them."""
    table = {id(event): event_json_size(event) for event in live}
    return lambda event: table[id(event)]


def _unscoped_live(log: list[LoggedEvent]) -> list[Event]:
    events = [record.envelope.event for record in log if not record.envelope.event.partial]
    return [event for event in drop_rewound(events) if event.isolation_scope is None]


@st.composite
def _windows(draw: st.DrawFn, live: list[Event]) -> list[Event]:
    """A window of raw live events (a slice or any subset), sometimes behind a seed."""
    raw = [event for event in live if not is_summary(event)]
    as_slice: bool = draw(st.booleans())
    if raw and as_slice:
        start = draw(st.integers(0, len(raw) - 1))
        window = raw[start : draw(st.integers(start + 1, len(raw)))]
    elif raw:
        window = draw(st.lists(st.sampled_from(raw), min_size=1, max_size=6))
    else:
        window = []
    summaries = [event for event in live if is_summary(event)]
    if summaries and (not window or draw(st.booleans())):
        previous = draw(st.sampled_from(summaries))
        window = [seed_event(previous, invocation_id="seed"), *window]
    if not window:
        window = [text_event("w", "i", draw(st.floats(90, 200)))]
    return window


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions(), st.data())
def test_running_gate_equals_the_reference_on_generated_sessions(
    log: list[LoggedEvent], data: st.DataObject
) -> None:
    live = _unscoped_live(log)
    window = data.draw(_windows(live))
    assert worth_compacting(live, window, _cached(live)) == is_worth_compacting(live, window)


@settings(max_examples=EXAMPLES, deadline=None)
@given(armed_sessions(), st.data())
def test_running_gate_equals_the_reference_on_armed_sessions(
    events: list[Event], data: st.DataObject
) -> None:
    live = [event for event in drop_rewound(events) if event.isolation_scope is None]
    window = data.draw(_windows(live))
    assert worth_compacting(live, window, _cached(live)) == is_worth_compacting(live, window)


_TIMES = st.sampled_from((0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0))


@st.composite
def _dense_lists(draw: st.DrawFn) -> list[Event]:
    """Few timestamps, many summaries: identical, nested, touching and inverted ranges."""
    events: list[Event] = []
    for serial in range(draw(st.integers(1, 12))):
        timestamp = draw(_TIMES)
        text = draw(st.sampled_from(("", "k", "k" * 30, "k" * 300)))
        if draw(st.integers(0, 2)) == 0:
            start, end = draw(_TIMES), draw(_TIMES)
            events.append(summary_event(f"s{serial}", start, end, timestamp, text=text or "k"))
        elif text:
            events.append(text_event(f"e{serial}", f"i{serial}", timestamp, text))
        else:
            events.append(Event(id=f"e{serial}", author="a", timestamp=timestamp))
    return events


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(_dense_lists(), st.data())
def test_running_gate_equals_the_reference_on_dense_summaries(
    live: list[Event], data: st.DataObject
) -> None:
    window = data.draw(_windows(live))
    assert worth_compacting(live, window, _cached(live)) == is_worth_compacting(live, window)


@settings(max_examples=EXAMPLES, deadline=None)
@given(_dense_lists(), _TIMES, _TIMES, _TIMES, _TIMES)
def test_removable_size_grows_with_the_range(
    live: list[Event], a: float, b: float, c: float, d: float
) -> None:
    low, high = sorted((a, b))
    wider_low, wider_high = min(low, c), max(high, d)
    assert removable_size(live, low, high) <= removable_size(live, wider_low, wider_high)
    assert removable_size(live, low, high) <= removable_size(live, low, math.inf)


# -- the direct serialization against the renaming walk ---------------------------------

_KEYS = st.sampled_from(("q", "maxResults", "max_results", "Deep", "x-y", "é"))
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=8,
)
_OBJECTS = st.dictionaries(_KEYS, _JSON, max_size=3)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


_PARTS = st.fixed_dictionaries(
    {},
    optional={
        "text": st.text(max_size=12),
        "thought": st.booleans(),
        "functionCall": st.fixed_dictionaries(
            {"name": st.text(max_size=5), "args": _maybe(_OBJECTS)},
            optional={"id": st.text(max_size=4), "willContinue": st.booleans()},
        ),
        "functionResponse": st.fixed_dictionaries(
            {"name": st.text(max_size=5), "response": _maybe(_OBJECTS)},
            optional={"id": st.text(max_size=4), "scheduling": st.just("WHEN_IDLE")},
        ),
        "inlineData": st.fixed_dictionaries(
            {"mimeType": st.just("image/png"), "data": st.just("aGk=")},
            optional={"videoMetadata": st.fixed_dictionaries({"fps": st.integers(1, 60)})},
        ),
        "fileData": st.fixed_dictionaries({"fileUri": st.just("gs://b/f")}),
        "executableCode": _OBJECTS,
        "toolCall": _OBJECTS,
        "partMetadata": _OBJECTS,
    },
)
_CONTENTS = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(("user", "model")),
        "parts": st.lists(_PARTS, max_size=3),
        "extraNote": st.text(max_size=4),
    },
)


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(_CONTENTS)
def test_direct_serialization_equals_the_renaming_walk(data: dict[str, Any]) -> None:
    content = Content.model_validate(data)
    assert content_json_size(content) == renamed_content_json_size(content)


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions())
def test_direct_serialization_equals_the_renaming_walk_on_sessions(log: list[LoggedEvent]) -> None:
    for record in log:
        content = record.envelope.event.content
        if content is not None:
            assert content_json_size(content) == renamed_content_json_size(content)


def _sized(table: dict[str, int]) -> Callable[[Event], int]:
    """Sizes given by hand, by event id."""
    return lambda event: table[event.id]


def _summary_then_two() -> list[Event]:
    return [
        summary_event("s", 100.0, 101.0, 102.0),
        text_event("e1", "i2", 103.0),
        text_event("e2", "i2", 104.0, author="agent"),
    ]


def test_the_bar_is_the_latest_surviving_summarys_size() -> None:
    sizes = _sized({"s": 50, "e1": 40, "e2": 37})
    assert previous_summary_size(_summary_then_two(), sizes) == 50
    assert previous_summary_size(_summary_then_two()[1:], sizes) == 0


def test_removing_exactly_the_bar_is_not_worth_compacting() -> None:
    # [103, 104] removes e1 and e2 and adds the weightless summary:
    # 40 + 37 - 27 = 50, not more than the summary's 50; one more character is.
    live = _summary_then_two()
    assert not worth_compacting(live, live[1:], _sized({"s": 50, "e1": 40, "e2": 37}))
    assert worth_compacting(live, live[1:], _sized({"s": 50, "e1": 40, "e2": 38}))
