"""Call/response pairing (reference §8.7)."""

from __future__ import annotations

from collections.abc import Mapping

from projections.contents.call_pairing import drop_orphan_calls, drop_orphan_responses
from projections.contents.response_order import merge_response_events
from schemas.event import Event
from tests.support.contents import texts
from tests.support.events import call, event, resp, text


def _ids(events: list[Event]) -> list[str]:
    return [e.id for e in events]


def test_orphan_response_before_its_call_is_dropped() -> None:
    events = [
        event("e1", "agent", 100, [resp("c1"), text("note")], role="user"),
        event("e2", "agent", 101, [call("c1")]),
        event("e3", "agent", 102, [resp("c1")], role="user"),
    ]
    kept = drop_orphan_responses(events)
    assert _ids(kept) == ["e1", "e2", "e3"]
    assert kept[0].content is not None
    assert [p.text for p in kept[0].content.parts or []] == ["note"]


def test_idless_responses_pair_by_name_with_idless_calls() -> None:
    events = [
        event("e1", "agent", 100, [call(None, "lookup")]),
        event("e2", "agent", 101, [resp(None, "lookup"), resp(None, "other")], role="user"),
    ]
    kept = drop_orphan_responses(events)
    assert kept[1].content is not None
    names = [p.function_response.name for p in kept[1].content.parts or [] if p.function_response]
    assert names == ["lookup"]


def test_idless_call_is_never_pruned_and_its_response_stays() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call(None, "lookup")]),
        event("e3", "agent", 102, [resp(None, "lookup")], role="user"),
        event("e4", "agent", 103, [call(None, "never_answered")]),
        event("e5", "agent", 104, [text("end")]),
    ]
    assert texts(events) == [
        "user:go",
        "model:call(None)",
        "user:resp(None={'ok': 1})",
        "model:call(None)",
        "model:end",
    ]


def test_unanswered_plain_call_is_pruned_but_long_running_stays() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [text("trying"), call("c1")]),
        event("e3", "agent", 102, [call("c2")]),
        event("e4", "agent", 103, [call("lr1")], longRunningToolIds=["lr1"]),
    ]
    pruned = drop_orphan_calls(events)
    assert _ids(pruned) == ["e1", "e2", "e4"]
    assert texts(events) == ["user:go", "model:trying", "model:call(lr1)"]


def test_stale_text_between_progress_updates_is_dropped() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("lr1")], longRunningToolIds=["lr1"]),
        event("e3", "agent", 102, [resp("lr1", response={"p": 10})], role="user"),
        event("e4", "agent", 103, [text("10%")]),
        event("e5", "agent", 104, [text("still going")]),
        event("e6", "agent", 105, [resp("lr1", response={"p": 100})], role="user"),
        event("e7", "agent", 106, [text("done")]),
    ]
    assert texts(events) == [
        "user:run",
        "model:call(lr1)",
        "user:resp(lr1={'p': 100})",
        "model:done",
    ]


def test_stale_text_kept_when_a_user_message_sits_between() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("lr1")], longRunningToolIds=["lr1"]),
        event("e3", "agent", 102, [resp("lr1", response={"p": 10})], role="user"),
        event("e4", "agent", 103, [text("10%")]),
        event("e5", "user", 104, [text("how far?")]),
        event("e6", "agent", 105, [resp("lr1", response={"p": 100})], role="user"),
        event("e7", "agent", 106, [text("done")]),
    ]
    assert texts(events) == [
        "user:run",
        "model:call(lr1)",
        "user:resp(lr1={'p': 100})",
        "model:10%",
        "user:how far?",
        "model:done",
    ]


def test_stale_text_kept_across_invocations_or_after_a_confirmation_request() -> None:
    def session(second_inv: str, first_actions: Mapping[str, object]) -> list[Event]:
        return [
            event("e1", "user", 100, [text("run")]),
            event("e2", "agent", 101, [call("lr1")], longRunningToolIds=["lr1"]),
            event(
                "e3",
                "agent",
                102,
                [resp("lr1", response={"p": 1})],
                role="user",
                actions=first_actions,
            ),
            event("e4", "agent", 103, [text("chatter")]),
            event(
                "e5", "agent", 104, [resp("lr1", response={"p": 2})], role="user", inv=second_inv
            ),
            event("e6", "user", 105, [text("next")], inv="inv9"),
        ]

    expected = [
        "user:run",
        "model:call(lr1)",
        "user:resp(lr1={'p': 2})",
        "model:chatter",
        "user:next",
    ]
    assert texts(session("inv2", {})) == expected
    confirm = {"requestedToolConfirmations": {"lr1": {"hint": "sure?"}}}
    assert texts(session("inv1", confirm)) == expected
    assert "model:chatter" not in texts(session("inv1", {}))


def test_calls_in_an_event_that_also_holds_responses_are_pruned() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("c1")]),
        event("e3", "agent", 102, [resp("c1"), call("c2")], role="user"),
        event("e4", "agent", 103, [resp("c2")], role="user"),
        event("e5", "agent", 104, [text("end")]),
    ]
    # e3's call c2 is never matched, so e4 finds no call event, c2 has no
    # response left and is pruned from e3.
    assert texts(events) == ["user:go", "model:call(c1)", "user:resp(c1={'ok': 1})", "model:end"]


def test_latest_response_discards_everything_after_its_call() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("a"), call("b")], longRunningToolIds=["a", "b"]),
        event("e3", "agent", 102, [resp("b", response={"v": "b1"})], role="user"),
        event("e4", "agent", 103, [text("waiting for a")]),
        event("e5", "user", 104, [text("any news?")], inv="inv2"),
        event("e6", "user", 105, [resp("a", response={"v": "a1"}), text("here")], inv="inv3"),
    ]
    assert texts(events) == [
        "user:go",
        "model:call(a)|call(b)",
        "user:resp(b={'v': 'b1'})|resp(a={'v': 'a1'})|here",
    ]


def test_latest_response_answering_two_call_events() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("a")], longRunningToolIds=["a"]),
        event("e3", "agent", 102, [text("between")]),
        event("e4", "agent", 103, [call("b")], longRunningToolIds=["b"]),
        event("e5", "agent", 104, [text("after")]),
        event("e6", "user", 105, [resp("a"), resp("b")], inv="inv2"),
    ]
    assert texts(events) == [
        "user:go",
        "model:call(a)",
        "user:resp(a={'ok': 1})",
        "model:between",
        "model:call(b)",
        "user:resp(b={'ok': 1})",
    ]


def test_reused_call_id_pairs_each_response_with_the_call_before_it() -> None:
    events = [
        event("e1", "agent", 100, [call("dup", args={"n": 1})]),
        event("e2", "agent", 101, [text("interlude")]),
        event("e3", "agent", 102, [call("dup", args={"n": 2})]),
        event("e4", "agent", 103, [resp("dup", response={"r": 2})], role="user"),
        event("e5", "agent", 104, [text("end")]),
    ]
    # The response belongs to the second call. Pruning goes by id, so the first
    # call stays too (a response with its id exists), unanswered.
    assert texts(events) == [
        "model:call(dup)",
        "model:interlude",
        "model:call(dup)",
        "user:resp(dup={'r': 2})",
        "model:end",
    ]


def test_merge_replaces_same_id_and_appends_the_rest() -> None:
    first = event("e1", "agent", 100, [resp("a", response={"v": 1}), resp("b")], role="user")
    second = event("e2", "agent", 101, [resp("a", response={"v": 2}), text("t")], role="user")
    merged = merge_response_events([first, second])
    assert merged.id == "e1"
    assert merged.content is not None
    parts = merged.content.parts or []
    assert [
        (p.function_response.id, p.function_response.response) if p.function_response else p.text
        for p in parts
    ] == [("a", {"v": 2}), ("b", {"ok": 1}), "t"]
