"""The two rearrangements that put responses after their calls (reference §8.7 steps 2-3).

Each expectation is written from the docstrings of :mod:`projections.contents.response_order`
and the reference: the rearrangement is called directly, so the events in between
the owning call and the last event reach it unpruned.
"""

from __future__ import annotations

from projections.contents.response_order import (
    merge_response_events,
    rearrange_async_responses,
    rearrange_latest_response,
)
from schemas.event import Event
from tests.support.events import Json, call, event, ids, resp, text


def _parts(event: Event) -> list[str]:
    """Each part as ``text``, ``call(id)`` or ``resp(id=response)``."""
    assert event.content is not None
    rendered: list[str] = []
    for part in event.content.parts or []:
        if part.function_call is not None:
            rendered.append(f"call({part.function_call.id})")
        elif part.function_response is not None:
            response = part.function_response
            rendered.append(f"resp({response.id}={response.response})")
        else:
            rendered.append(str(part.text))
    return rendered


def _answer(event_id: str, timestamp: float, parts: list[Json]) -> Event:
    """A tool's event of `parts` (role user, author agent)."""
    return event(event_id, "agent", timestamp, parts, role="user")


def test_merge_replaces_a_response_appended_by_an_earlier_later_event() -> None:
    # b is not in the first event: the second appends it, the third replaces it.
    merged = merge_response_events(
        [
            _answer("e1", 100, [resp("a", response={"v": 1})]),
            _answer("e2", 101, [resp("b", response={"v": 1})]),
            _answer("e3", 102, [resp("b", response={"v": 2})]),
        ]
    )
    assert merged.id == "e1"
    assert _parts(merged) == ["resp(a={'v': 1})", "resp(b={'v': 2})"]


def test_earlier_responses_after_a_text_event_are_still_merged() -> None:
    # The model's "waiting" text sits between the call and the earlier response to b.
    events = [
        event("q", "user", 100, [text("go")]),
        event("c", "agent", 101, [call("a"), call("b")], longRunningToolIds=["a", "b"]),
        event("w", "agent", 102, [text("waiting")]),
        _answer("rb", 103, [resp("b", response={"v": "b1"})]),
        event("last", "user", 104, [resp("a", response={"v": "a1"})], inv="inv2"),
    ]
    result = rearrange_latest_response(events)
    assert ids(result) == ["q", "c", "rb"]
    assert _parts(result[2]) == ["resp(b={'v': 'b1'})", "resp(a={'v': 'a1'})"]


def test_an_orphan_response_in_between_contributes_to_no_owner() -> None:
    # "o" answers no call: none of its parts joins the merged response of c.
    events = [
        event("q", "user", 100, [text("go")]),
        event("c", "agent", 101, [call("a")], longRunningToolIds=["a"]),
        _answer("o", 102, [resp("zz"), text("note")]),
        event("last", "user", 103, [resp("a", response={"v": 2})], inv="inv2"),
    ]
    result = rearrange_latest_response(events)
    assert ids(result) == ["q", "c", "last"]
    assert _parts(result[2]) == ["resp(a={'v': 2})"]


def test_an_earlier_call_event_gives_its_responses_only() -> None:
    # "m" answers b and calls d: it is cut to its response, without its text or call.
    events = [
        event("q", "user", 100, [text("go")]),
        event("c", "agent", 101, [call("a"), call("b")], longRunningToolIds=["a", "b"]),
        _answer("m", 102, [resp("b", response={"v": "b1"}), text("and"), call("d")]),
        event("last", "user", 103, [resp("a", response={"v": "a1"})], inv="inv2"),
    ]
    result = rearrange_latest_response(events)
    assert ids(result) == ["q", "c", "m"]
    assert _parts(result[2]) == ["resp(b={'v': 'b1'})", "resp(a={'v': 'a1'})"]


def test_an_earlier_event_is_cut_to_the_responses_of_each_owner() -> None:
    # "m" answers a (owned by c1) and b (owned by c2), with a note: c1's merged
    # response gets a and the note, c2's gets b and the note.
    events = [
        event("q", "user", 100, [text("go")]),
        event("c1", "agent", 101, [call("a")], longRunningToolIds=["a"]),
        event("c2", "agent", 102, [call("b")], longRunningToolIds=["b"]),
        _answer(
            "m", 103, [resp("a", response={"v": 1}), text("note"), resp("b", response={"v": 1})]
        ),
        event("last", "user", 104, [resp("a", response={"v": 2}), resp("b", response={"v": 2})]),
    ]
    result = rearrange_latest_response(events)
    assert ids(result) == ["q", "c1", "m", "c2", "m"]
    assert _parts(result[2]) == ["resp(a={'v': 2})", "note"]
    assert _parts(result[4]) == ["note", "resp(b={'v': 2})"]


def _progress(event_id: str, timestamp: float, percent: int, inv: str, **fields: object) -> Event:
    """A progress update of the long-running call lr1."""
    return event(
        event_id,
        "agent",
        timestamp,
        [resp("lr1", response={"p": percent})],
        role="user",
        inv=inv,
        **fields,
    )


def _progress_session(first_update: Event) -> list[Event]:
    """lr1's updates: `first_update`, then two of inv2 with chatter between them."""
    return [
        event("q", "user", 100, [text("run")]),
        event("c", "agent", 101, [call("lr1")], longRunningToolIds=["lr1"]),
        first_update,
        _progress("r2", 103, 50, "inv2"),
        event("chatter", "agent", 104, [text("half way")], inv="inv2"),
        _progress("r3", 105, 100, "inv2"),
        event("done", "agent", 106, [text("done")], inv="inv2"),
    ]


def test_chatter_goes_after_a_pair_of_updates_from_another_invocation() -> None:
    # r1 and r2 differ in invocation: nothing between them goes, but r2 and r3 still pair.
    events = _progress_session(_progress("r1", 102, 10, "inv1"))
    assert ids(rearrange_async_responses(events)) == ["q", "c", "r3", "done"]


def test_chatter_goes_after_a_pair_whose_first_update_asks_for_confirmation() -> None:
    confirm = {"requestedToolConfirmations": {"lr1": {"hint": "sure?"}}}
    events = _progress_session(_progress("r1", 102, 10, "inv2", actions=confirm))
    assert ids(rearrange_async_responses(events)) == ["q", "c", "r3", "done"]


def test_chatter_right_after_a_first_update_before_every_call_goes() -> None:
    # Both updates come before the call: they go to it; the chatter between them goes.
    events = [
        _progress("r0", 100, 10, "inv1"),
        event("chatter", "agent", 101, [text("10%")]),
        _progress("r1", 102, 100, "inv1"),
        event("c", "agent", 103, [call("lr1")], longRunningToolIds=["lr1"]),
    ]
    assert ids(rearrange_async_responses(events)) == ["c", "r1"]


def _parts_json(each: Event) -> list[Json]:
    """The parts of `each` as JSON, without the unset fields."""
    assert each.content is not None
    return [
        part.model_dump(mode="json", exclude_none=True, by_alias=True)
        for part in each.content.parts or []
    ]


def test_an_answer_owned_only_by_the_event_before_changes_nothing() -> None:
    # The other part stays where it is: the history is returned as it came.
    events = [
        event("u", "user", 1.0, [text("q")]),
        event("c1", "agent", 2.0, [call("k1")]),
        event("r1", "agent", 3.0, [text("here"), resp("k1")], role="user"),
    ]
    result = rearrange_latest_response(events)
    assert len(result) == 3
    assert all(got is want for got, want in zip(result, events, strict=True))


def test_an_answer_no_call_owns_changes_nothing() -> None:
    events = [
        event("u", "user", 1.0, [text("q")]),
        event("c1", "agent", 2.0, [call("k1")]),
        event("r9", "agent", 3.0, [resp("k9")], role="user"),
    ]
    assert ids(rearrange_latest_response(events)) == ["u", "c1", "r9"]


def test_owned_answers_leave_earlier_events_that_keep_other_calls_or_answers() -> None:
    # m1 and m2 each lose their answer to k1, owned by c1; m1 keeps its answer to
    # k5 (no call owns it), m2 its call k7, so both stay, cut to what they keep.
    events = [
        event("u", "user", 1.0, [text("q")]),
        event("c1", "agent", 2.0, [call("k1")]),
        event("m1", "agent", 3.0, [resp("k1"), resp("k5")], role="user"),
        event("m2", "agent", 4.0, [resp("k1"), call("k7")], role="model"),
        event("c2", "agent", 5.0, [call("k2")]),
        event("last", "agent", 6.0, [resp("k1"), resp("k2")], role="user"),
    ]
    result = rearrange_latest_response(events)
    by_id = {each.id: each for each in result}
    assert "m1" in by_id
    assert "m2" in by_id
    assert _parts_json(by_id["m1"]) == [
        {"functionResponse": {"id": "k5", "name": "tool", "response": {"ok": 1}}}
    ]
    assert _parts_json(by_id["m2"]) == [{"functionCall": {"id": "k7", "name": "tool", "args": {}}}]
    order = [each.id for each in result]
    assert order.index("c1") < order.index("m1") < order.index("m2") < order.index("c2")


def test_an_answer_without_a_call_does_not_hide_the_next_answer_of_its_event() -> None:
    events = [
        event("c1", "agent", 1.0, [call("k1")]),
        event("r1", "agent", 2.0, [resp("k9"), resp("k1")], role="user"),
    ]
    assert ids(rearrange_async_responses(events)) == ["c1", "r1"]
