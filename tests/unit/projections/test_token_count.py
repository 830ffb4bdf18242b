from __future__ import annotations

from collections.abc import Iterator

from projections.compaction.token_count import (
    content_characters,
    estimated_prompt_token_count,
    newest_recorded_count,
    observed_prompt_token_count,
    recorded_prompt_token_count,
)
from schemas.event import Content, Event
from tests.support.events import summary_event, text_event


def test_walk_stops_at_a_subsumed_summary_too() -> None:
    events = [
        text_event("e1", "i", 100, usage_metadata={"prompt_token_count": 7}),
        summary_event("outer", 90, 200, 101),
        summary_event("inner", 100, 100, 102),  # subsumed, still stops the walk
    ]
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope=None) is None


def test_other_scopes_are_ignored() -> None:
    events = [
        text_event("e1", "i", 100, usage_metadata={"prompt_token_count": 7}),
        text_event("e2", "i", 101, usage_metadata={"prompt_token_count": 9}, isolation_scope="t"),
        summary_event("s", 1, 2, 102, isolation_scope="t"),
    ]
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope=None) == 7
    assert recorded_prompt_token_count(events, agent_name="", isolation_scope="t") is None


def test_characters_count_thought_text_and_ascii_escaped_json() -> None:
    content = Content.model_validate(
        {
            "role": "model",
            "parts": [
                {"text": "abc", "thought": True},
                {"function_call": {"name": "find", "args": {"q": "é"}}},
                {"function_call": {"name": "noargs", "args": {}}},
                {"function_response": {"name": "find", "response": {"n": 1}}},
            ],
        }
    )
    # 3 + (4 + len('{"q": "\\u00e9"}')=15) + 6 + (4 + len('{"n": 1}')=8)
    assert content_characters([content]) == 3 + 19 + 6 + 12


def test_no_countable_characters_gives_no_count() -> None:
    state_only = text_event("e", "i", 1, "")
    assert observed_prompt_token_count([state_only]) is None


def test_estimate_is_characters_floor_divided_by_four() -> None:
    events = [text_event("e1", "i", 1, "x" * 7)]
    assert observed_prompt_token_count(events) == 1


def test_the_newest_first_walk_reads_no_further_than_it_needs() -> None:
    events = [
        text_event("e1", "i", 100, usage_metadata={"prompt_token_count": 5}),
        text_event("e2", "i", 101, author="a", usage_metadata={"prompt_token_count": 7}),
        text_event("e3", "i", 102, author="b", usage_metadata={"prompt_token_count": 9}),
    ]
    read: list[str] = []

    def newest_first() -> Iterator[Event]:
        for event in reversed(events):
            read.append(event.id)
            yield event

    assert newest_recorded_count(newest_first(), agent_name="a", isolation_scope=None) == 7
    assert read == ["e3", "e2"]
    for agent in ("", "a", "b", "c"):
        assert newest_recorded_count(
            reversed(events), agent_name=agent, isolation_scope=None
        ) == recorded_prompt_token_count(events, agent_name=agent, isolation_scope=None)


def test_the_estimate_reads_the_hooks_isolation_scope_only() -> None:
    # No usage recorded: characters // 4 of the contents of that scope's events.
    live = [
        text_event("u1", "i1", 100.0, "x" * 20),
        text_event("u2", "i2", 101.0, "y" * 40, isolation_scope="scope-1"),
    ]
    assert observed_prompt_token_count(live, isolation_scope="scope-1") == 10
    assert observed_prompt_token_count(live) == 5
    assert (
        estimated_prompt_token_count(
            live, agent_name="", current_branch=None, isolation_scope="scope-1"
        )
        == 10
    )
