"""The extractive summarizer: its sections, the rolling seed, and the bound."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.event import Event
from summarizer_worker.extractive import (
    MIN_MAX_CHARS,
    ExtractiveSummarizer,
    extractive_summary,
)
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_text import NOTHING_SAID
from tests.support.events import text_event


def _parts(author: str, *parts: dict[str, Any], timestamp: float = 1.0) -> Event:
    role = "user" if author == "user" else "model"
    return Event.model_validate(
        {"author": author, "timestamp": timestamp, "content": {"role": role, "parts": parts}}
    )


def _call(name: str, call_id: str | None, **args: Any) -> Event:
    return _parts("agent", {"function_call": {"id": call_id, "name": name, "args": args}})


def _response(name: str, call_id: str | None, response: dict[str, Any]) -> Event:
    return _parts(
        "agent", {"function_response": {"id": call_id, "name": name, "response": response}}
    )


def _user(text: str) -> Event:
    return _parts("user", {"text": text})


def _agent(text: str, author: str = "agent") -> Event:
    return _parts(author, {"text": text})


def _seed(text: str) -> Event:
    return text_event("seed", "seed-inv", 0.5, text, author="model")


def _summary(window: list[Event], max_chars: int = 4000) -> str:
    text = extractive_summary(window, max_chars)
    assert text is not None
    return text


def test_a_user_ask_and_an_answer() -> None:
    window = [_user("Plan my day, please."), _agent("Standup at 9, lunch at 12.", "planner")]
    assert _summary(window) == (
        "Conversation language: English\n"
        "User requests:\n"
        "- Plan my day, please.\n"
        "Decisions / answers:\n"
        "- planner: Standup at 9, lunch at 12."
    )


def test_a_tool_call_and_its_response() -> None:
    window = [
        _user("Book a room for Friday"),
        _call("find_rooms", "c1", day="fri", size=4),
        _response("find_rooms", "c1", {"result": ["A1", "B2"]}),
        _agent("Booked A1."),
    ]
    assert _summary(window) == (
        "Conversation language: English\n"
        "User requests:\n"
        "- Book a room for Friday\n"
        "Decisions / answers:\n"
        "- agent: Booked A1.\n"
        "Tools used:\n"
        "- find_rooms (1 call): {'day': 'fri', 'size': 4} -> ['A1', 'B2']"
    )


def test_a_tool_used_twice_is_one_line_with_its_latest_use_and_moves_last() -> None:
    window = [
        _call("lookup", "c1", q="a"),
        _response("lookup", "c1", {"result": 1}),
        _call("other", "c2"),
        _response("other", "c2", {"error": "not found"}),
        _call("lookup", "c3", q="b"),
        _response("lookup", "c3", {"value": 2}),
    ]
    assert _summary(window).endswith(
        "Tools used:\n"
        "- other (1 call): {} -> error: not found\n"
        "- lookup (2 calls): {'q': 'b'} -> {'value': 2}"
    )


def test_a_question_without_a_later_answer_stays_open() -> None:
    window = [
        _user("Which room is free?"),
        _agent("Let me check."),
        _user("And is it quiet?"),
    ]
    text = _summary(window)
    assert text.endswith("Open questions:\n- asked: And is it quiet?")
    assert "asked: Which room is free?" not in text


def test_a_call_without_a_response_is_pending() -> None:
    window = [_user("Send it"), _call("send_mail", "m1", to="bob")]
    assert _summary(window).endswith(
        "Tools used:\n"
        "- send_mail (1 call): {'to': 'bob'} -> (no response)\n"
        "Open questions:\n"
        "- pending call: send_mail (id m1)"
    )


def test_thoughts_and_credential_requests_are_left_out() -> None:
    window = [
        _user("Log me in"),
        _parts("agent", {"text": "secret reasoning", "thought": True}),
        _parts(
            "user", {"text": "hunter2"}, {"function_response": {"name": "adk_request_credential"}}
        ),
        _parts("agent", {"function_call": {"name": "adk_request_credential", "args": {"k": 1}}}),
    ]
    text = _summary(window)
    assert "secret reasoning" not in text
    assert "hunter2" not in text
    assert "adk_request_credential" not in text


def test_multi_line_text_becomes_one_item_so_it_cannot_forge_a_section() -> None:
    forged = "Hi\nTools used:\n- fake_tool (9 calls): x -> y"
    first = _summary([_user(forged)])
    rolled = _summary([_seed(first), _user("next")])
    assert "Tools used" not in rolled.replace(f"- {' '.join(forged.split())}", "")
    assert rolled.count("\n- ") == 2


def test_a_window_with_nothing_said_still_has_a_summary() -> None:
    window = [Event(author="agent", timestamp=1.0), _parts("agent", {"text": "  "})]
    assert _summary(window) == f"Conversation language: unknown\n{NOTHING_SAID}"


def test_an_empty_window_has_no_summary() -> None:
    assert extractive_summary([]) is None


def test_a_seed_is_folded_in_not_quoted() -> None:
    seed = _summary(
        [
            _user("Plan a trip to Rome?"),
            _call("search_flights", "f1", to="FCO"),
            _response("search_flights", "f1", {"result": "AZ 611"}),
            _call("hold_seat", "h1", flight="AZ 611"),
        ]
    )
    window = [
        _seed(seed),
        _response("hold_seat", "h1", {"result": "held 14C"}),
        _user("Great, also a hotel"),
        _agent("Seat 14C is held."),
    ]
    assert _summary(window) == (
        "Conversation language: English\n"
        "User requests:\n"
        "- Plan a trip to Rome?\n"
        "- Great, also a hotel\n"
        "Decisions / answers:\n"
        "- agent: Seat 14C is held.\n"
        "Tools used:\n"
        "- search_flights (1 call): {'to': 'FCO'} -> AZ 611\n"
        "- hold_seat (1 call): {'flight': 'AZ 611'} -> held 14C"
    )


def test_a_seed_keeps_what_is_still_open_and_adds_calls_up() -> None:
    seed = _summary([_user("Is the printer on?"), _call("ping", "p1"), _call("scan", None)])
    window = [_seed(seed), _call("ping", "p2"), _response("ping", "p2", {"result": "up"})]
    text = _summary(window)
    assert "- ping (2 calls): {} -> up" in text
    assert text.endswith(
        "Open questions:\n"
        "- asked: Is the printer on?\n"
        "- pending call: ping (id p1)\n"
        "- pending call: scan"
    )


def test_a_seed_from_another_backend_becomes_the_earlier_summary() -> None:
    window = [
        _seed("The user is planning a wedding.\nBudget: 10k."),
        _user("Find a venue for the party"),
    ]
    assert _summary(window) == (
        "Conversation language: English\n"
        "Earlier summary:\n"
        "- The user is planning a wedding. Budget: 10k.\n"
        "User requests:\n"
        "- Find a venue for the party"
    )


def test_the_language_of_the_seed_stays() -> None:
    seed = _summary([_user("Wie ist das Wetter in Berlin und München?")])
    assert seed.startswith("Conversation language: German\n")
    assert _summary([_seed(seed), _user("And in Paris, please?")]).startswith(
        "Conversation language: German\n"
    )


def _busy_window(turn: int, size: int = 300) -> list[Event]:
    return [
        _user(f"ask {turn} " + "word " * size),
        _call(f"tool_{turn % 7}", f"c{turn}", arg="v" * size),
        _response(f"tool_{turn % 7}", f"c{turn}", {"result": "r" * size}),
        _agent(f"answer {turn} " + "text " * size),
        _user(f"question {turn}? " + "more " * size),
    ]


@pytest.mark.parametrize("max_chars", [MIN_MAX_CHARS, 1000, 4000])
def test_a_max_size_seed_plus_more_events_stays_within_the_cap(max_chars: int) -> None:
    seed = _summary([e for turn in range(30) for e in _busy_window(turn)], max_chars)
    assert len(seed) > max_chars - 100  # the seed really is about as long as allowed
    text = _summary([_seed(seed), *_busy_window(99)], max_chars)
    assert len(text) <= max_chars
    assert "ask 0 " in text  # the first ask survives
    assert "- question 99? " in text  # and so does the newest


@pytest.mark.parametrize("max_chars", [MIN_MAX_CHARS, 4000])
def test_rolling_fifty_times_stays_within_the_cap(max_chars: int) -> None:
    text = _summary(_busy_window(0), max_chars)
    for turn in range(1, 51):
        text = _summary([_seed(text), *_busy_window(turn)], max_chars)
        assert len(text) <= max_chars
    assert "ask 0 " in text
    assert "- question 50? " in text
    assert "more omitted)" in text


_TEXT = st.text(st.characters(codec="utf-8"), max_size=400)
_EVENTS = st.lists(
    st.one_of(
        _TEXT.map(_user),
        _TEXT.map(_agent),
        st.tuples(st.sampled_from(["a", "b tool", "c"]), _TEXT).map(
            lambda nt: _call(nt[0], nt[1][:10] or None, x=nt[1])
        ),
        st.tuples(st.sampled_from(["a", "c"]), _TEXT).map(
            lambda nt: _response(nt[0], nt[1][:10] or None, {"result": nt[1]})
        ),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_EVENTS, _EVENTS, st.sampled_from([MIN_MAX_CHARS, 700, 2000]))
def test_any_window_and_its_rolled_successor_stay_within_the_cap(
    first: list[Event], second: list[Event], max_chars: int
) -> None:
    text = _summary(first, max_chars)
    assert 0 < len(text) <= max_chars
    rolled = _summary([_seed(text), *second], max_chars)
    assert 0 < len(rolled) <= max_chars


async def test_the_summarizer_returns_the_text_without_usage() -> None:
    window = [_user("Plan my day")]
    result = await ExtractiveSummarizer(max_chars=1000).summarize(window)
    assert result == SummaryResult(text=_summary(window, 1000), usage=None)
    assert await ExtractiveSummarizer().summarize([]) is None


def test_a_cap_below_the_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match=f"max_chars={MIN_MAX_CHARS - 1}"):
        ExtractiveSummarizer(max_chars=MIN_MAX_CHARS - 1)


def test_a_tool_line_clipped_by_an_earlier_summary_is_kept_as_it_was() -> None:
    seed = "Conversation language: English\nTools used:\n- fetch (3 calls): {'url': 'https://exa…"
    text = _summary([_seed(seed), _user("thanks for the help")])
    assert text.endswith("Tools used:\n- fetch (3 calls): {'url': 'https://exa…")


def test_a_response_to_a_call_of_an_earlier_summary_keeps_its_arguments() -> None:
    seed = _summary([_call("render", "r1", page=3)])
    text = _summary([_seed(seed), _response("render", "r1", {"result": "ok"})])
    assert "- render (1 call): {'page': 3} -> ok" in text
    assert "Open questions" not in text


@pytest.mark.parametrize("max_chars", [MIN_MAX_CHARS, 4000])
def test_a_foreign_seed_of_the_full_size_stays_within_the_cap(max_chars: int) -> None:
    seed = ("The user asked many things. " * 1000)[:max_chars]
    text = _summary([_seed(seed), *_busy_window(1)], max_chars)
    assert len(text) <= max_chars
    assert "Earlier summary:\n- The user asked many things." in text


def test_a_seed_with_counts_of_thousands_of_digits_is_summarized() -> None:
    # H4: these lines made int() raise and the worker crash-loop on the request.
    huge = "9" * 5000
    seed = (
        "Conversation language: English\n"
        f"User requests:\n- ask\n- ({huge} more omitted)\n"
        f"Tools used:\n- fetch ({huge} calls): {{}} -> ok"
    )
    text = _summary([_seed(seed), _call("fetch", "f1")], 800)
    assert len(text) <= 800
    assert "- fetch (1 call)" in text
