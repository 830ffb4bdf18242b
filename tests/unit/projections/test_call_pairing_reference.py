"""Spec audit, transcriptions (reference §8.5) and call/response pairing (§8.7).

Every scenario is built from the reference text; the expected request
contents were worked out by hand from the rules, not by running the code.
"""

from __future__ import annotations

from typing import Any

from projections.contents.other_agents import OTHER_AGENT_PREAMBLE, QUOTE_BEGIN, QUOTE_END
from schemas.event import Event
from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, text


def _chunk(event_id: str, timestamp: float, field: str, value: str, author: str = "user") -> Event:
    fields: dict[str, Any] = {field: {"text": value}}
    return event(event_id, author, timestamp, None, **fields)


# --- §8.5 transcriptions ----------------------------------------------------------


def test_input_is_user_output_is_model_and_runs_alternate() -> None:
    events = [
        _chunk("e1", 100, "inputTranscription", "a"),
        _chunk("e2", 101, "outputTranscription", "b", "agent"),
        _chunk("e3", 102, "inputTranscription", "c"),
        _chunk("e4", 103, "inputTranscription", "d"),
    ]
    assert contents(events) == [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"text": "b"}]},
        {"role": "user", "parts": [{"text": "cd"}]},
    ]


def test_buffer_waits_when_the_next_event_has_transcription_text_even_with_content() -> None:
    # The look-ahead only asks whether the next event has input transcription
    # text; a next event with content is passed through, so the buffer carries
    # over to the next transcription-only event.
    with_content = event("e2", "user", 101, [text("typed")], inputTranscription={"text": "B"})
    events = [
        _chunk("e1", 100, "inputTranscription", "A"),
        with_content,
        _chunk("e3", 102, "inputTranscription", "C"),
    ]
    assert texts(events) == ["user:typed", "user:AC"]


def test_other_agents_transcription_is_quoted_after_conversion() -> None:
    events = [_chunk("e1", 100, "outputTranscription", "spoken", "helper")]
    assert contents(events) == [
        {
            "role": "user",
            "parts": [
                {"text": OTHER_AGENT_PREAMBLE},
                {"text": f"[helper] said:\n{QUOTE_BEGIN}\nspoken\n{QUOTE_END}"},
            ],
        }
    ]


def test_event_with_both_transcriptions_counts_as_input() -> None:
    both = event(
        "e1",
        "user",
        100,
        None,
        inputTranscription={"text": "in"},
        outputTranscription={"text": "out"},
    )
    assert contents([both]) == [{"role": "user", "parts": [{"text": "in"}]}]


# --- §8.7 step 1: orphan responses ----------------------------------------------------


def test_orphan_responses_by_id_and_by_name() -> None:
    events = [
        event("e1", "user", 100, [resp("early", "t"), text("kept text")]),
        event("e2", "agent", 101, [call("early", "t"), call(None, "named")]),
        event("e3", "agent", 102, [resp("early", "t"), resp(None, "named")], role="user"),
        event("e4", "agent", 103, [resp(None, "early")], role="user"),  # id-less needs id-less
        event("e5", "agent", 104, [resp(None, "other")], role="user"),
        event("e6", "agent", 105, [text("end")]),
    ]
    assert texts(events) == [
        "user:kept text",
        "model:call(early)|call(None)",
        "user:resp(early={'ok': 1})|resp(None={'ok': 1})",
        "model:end",
    ]


def test_response_in_the_calls_own_event_is_an_orphan() -> None:
    events = [
        event("e1", "agent", 100, [resp("c1"), call("c1")]),
        event("e2", "user", 101, [text("q")]),
    ]
    # Step 1 drops the response (no earlier call); step 4 then drops the
    # call (no response anywhere): the event vanishes.
    assert texts(events) == ["user:q"]


# --- §8.7 step 2: latest-response rearrangement ----------------------------------------


def test_latest_response_with_two_owners_and_a_text_part() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("a")], longRunningToolIds=["a"]),
        event("e3", "agent", 102, [resp("a", response={"s": "pending"})], role="user"),
        event("e4", "agent", 103, [call("b")], longRunningToolIds=["b"]),
        event("e5", "agent", 104, [text("waiting")]),
        event(
            "e6",
            "user",
            105,
            [resp("a", response={"s": "done"}), text("note"), resp("b", response={"s": "ok"})],
            inv="inv2",
        ),
    ]
    # Owners: e2 (a) and e4 (b), latest e4, which gets the text part. e3 is
    # emptied and goes; e5 is after the latest owner and goes.
    assert texts(events) == [
        "user:go",
        "model:call(a)",
        "user:resp(a={'s': 'done'})",
        "model:call(b)",
        "user:resp(b={'s': 'ok'})|note",
    ]


def test_latest_response_right_after_its_call_changes_nothing() -> None:
    events = [
        event("e1", "agent", 100, [call("a")], longRunningToolIds=["a"]),
        event("e2", "agent", 101, [text("still here")]),
        event("e3", "agent", 102, [call("b")]),
        event("e4", "user", 103, [resp("b")]),
    ]
    assert texts(events) == [
        "model:call(a)",
        "model:still here",
        "model:call(b)",
        "user:resp(b={'ok': 1})",
    ]


def test_latest_response_discards_later_text_replies() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("lr", "job")], longRunningToolIds=["lr"]),
        event("e3", "agent", 102, [text("started, ask me anything")]),
        event("e4", "user", 103, [text("unrelated question")], inv="inv2"),
        event("e5", "agent", 104, [text("unrelated answer")], inv="inv2"),
        event("e6", "user", 105, [resp("lr", "job", {"r": 1})], inv="inv3"),
    ]
    assert texts(events) == ["user:go", "model:call(lr)", "user:resp(lr={'r': 1})"]


def test_idless_latest_response_finds_its_call_by_name() -> None:
    events = [
        event("e1", "agent", 100, [call(None, "job")]),
        event("e2", "agent", 101, [text("waiting")]),
        event("e3", "user", 102, [resp(None, "job", {"r": 1})]),
    ]
    assert texts(events) == ["model:call(None)", "user:resp(None={'r': 1})"]


# --- §8.7 step 3: async responses in history -------------------------------------------


def test_async_responses_merge_after_their_call_event() -> None:
    events = [
        event("e1", "agent", 100, [call("a"), call("b")]),
        event("e2", "user", 101, [text("meanwhile")]),
        event("e3", "agent", 102, [resp("b", response={"v": "b"})], role="user"),
        event("e4", "agent", 103, [resp("a", response={"v": "a"})], role="user"),
        event("e5", "agent", 104, [text("done")]),
    ]
    assert texts(events) == [
        "model:call(a)|call(b)",
        "user:resp(b={'v': 'b'})|resp(a={'v': 'a'})",
        "user:meanwhile",
        "model:done",
    ]


def test_progress_updates_keep_only_the_last_and_drop_stale_text() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("lr", "job")], longRunningToolIds=["lr"]),
        event("e3", "agent", 102, [resp("lr", "job", {"p": 10})], role="user"),
        event("e4", "agent", 103, [text("10% done")]),
        event("e5", "agent", 104, [text("still going")]),
        event("e6", "agent", 105, [resp("lr", "job", {"p": 100})], role="user"),
        event("e7", "agent", 106, [text("finished")]),
    ]
    assert texts(events) == [
        "user:go",
        "model:call(lr)",
        "user:resp(lr={'p': 100})",
        "model:finished",
    ]


def test_stale_text_kept_when_authors_differ_or_a_call_sits_between() -> None:
    def session(second_author: str, middle: list[Any]) -> list[Event]:
        return [
            event("e1", "agent", 101, [call("lr", "job")], longRunningToolIds=["lr"]),
            event("e2", "agent", 102, [resp("lr", "job", {"p": 1})], role="user"),
            *middle,
            event("e9", second_author, 109, [resp("lr", "job", {"p": 2})], role="user"),
            event("e10", "agent", 110, [text("end")]),
        ]

    chatter = event("e3", "agent", 103, [text("chatter")])
    assert texts(session("agent", [chatter])) == [
        "model:call(lr)",
        "user:resp(lr={'p': 2})",
        "model:end",
    ]
    # Different author of the second update: the chatter stays.
    assert texts(session("user", [chatter])) == [
        "model:call(lr)",
        "user:resp(lr={'p': 2})",
        "model:chatter",
        "model:end",
    ]
    # A text reply that also calls a tool is no stale chatter: nothing goes.
    with_call = event("e3", "agent", 103, [text("and"), call("x")])
    assert texts(
        session("agent", [with_call, event("e4", "agent", 104, [resp("x")], role="user")])
    )[:4] == [
        "model:call(lr)",
        "user:resp(lr={'p': 2})",
        "model:and|call(x)",
        "user:resp(x={'ok': 1})",
    ]


def test_response_and_call_in_one_event_is_only_a_response_event() -> None:
    events = [
        event("e1", "agent", 100, [call("a")]),
        event("e2", "agent", 101, [resp("a"), call("b")], role="user"),
        event("e3", "agent", 102, [resp("b")], role="user"),
        event("e4", "agent", 103, [text("end")]),
    ]
    # e2's call b is never matched: e3 is attributed to nothing and vanishes,
    # then call b has no response left and is pruned from e2.
    assert texts(events) == ["model:call(a)", "user:resp(a={'ok': 1})", "model:end"]


# --- §8.7 step 4: orphan calls ------------------------------------------------------------


def test_orphan_calls_pruned_unless_long_running_anywhere_or_idless() -> None:
    events = [
        event("e1", "agent", 100, [text("calling"), call("plain"), call("lr"), call(None, "x")]),
        event("e2", "agent", 101, [text("marker")], longRunningToolIds=["lr"]),
        event("e3", "agent", 102, [call("gone")]),
    ]
    assert texts(events) == ["model:calling|call(lr)|call(None)", "model:marker"]
