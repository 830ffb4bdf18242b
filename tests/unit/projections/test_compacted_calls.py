"""Summaries in contents assembly: masking (reference §8.3) and call recovery (§8.4)."""

from __future__ import annotations

from projections.compaction.masking import mask_compacted
from projections.contents.compacted_calls import recover_compacted_calls
from tests.support.contents import texts
from tests.support.events import call, event, ids, resp, summary_event, text


def test_inverted_range_hides_nothing_but_is_shown_at_its_end() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        event("e3", "user", 102, [text("c")]),
        summary_event("s1", 102, 100, 103, "inverted"),  # start > end
    ]
    assert texts(events) == ["user:a", "model:inverted", "model:b", "user:c"]


def test_summary_resorts_unrelated_events_by_timestamp() -> None:
    # Deliberate ADK quirk (§14.1): any visible summary re-sorts the whole list.
    events = [
        event("e1", "user", 100, [text("late stamp")]),
        event("e2", "agent", 90, [text("early stamp")]),
        summary_event("s1", 10, 20, 110, "old"),
    ]
    assert texts(events) == ["model:old", "model:early stamp", "user:late stamp"]
    assert texts(events[:2]) == ["user:late stamp", "model:early stamp"]


def test_summary_is_the_current_agents_turn_or_models_without_name() -> None:
    events = [event("e1", "user", 100, [text("x")]), summary_event("s1", 100, 100, 101, "sum")]
    assert texts(events, agent_name="") == ["model:sum"]
    assert texts(events, agent_name="someone") == ["model:sum"]


def test_compacted_long_running_call_is_recovered_before_its_final_result() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("lr1", "job")], longRunningToolIds=["lr1"]),
        event("e3", "agent", 102, [resp("lr1", "job", {"status": "pending"})], role="user"),
        summary_event("s1", 100, 102, 103, "started job"),
        event("e4", "user", 104, [resp("lr1", "job", {"status": "done"})], inv="inv2"),
    ]
    assert texts(events) == [
        "model:started job",
        "model:call(lr1)",
        "user:resp(lr1={'status': 'done'})",
    ]


def test_recovery_brings_back_sibling_responses_that_were_all_masked() -> None:
    call_event = event("e2", "agent", 101, [call("a"), call("b")], longRunningToolIds=["a"])
    b_early = event("e3", "agent", 102, [resp("b", response={"v": "b-old"})], role="user")
    b_late = event("e4", "agent", 103, [resp("b", response={"v": "b-new"})], role="user")
    a_final = event("e6", "user", 106, [resp("a", response={"v": "a"})], inv="inv2")
    source = [
        event("e1", "user", 100, [text("go")]),
        call_event,
        b_early,
        b_late,
        summary_event("s1", 100, 104, 105, "sum"),
        a_final,
    ]
    masked = mask_compacted(source, "agent")
    recovered = recover_compacted_calls(masked, source)
    assert [e.id for e in recovered] == ["s1", "e2", "e4", "e6"]
    assert texts(source) == [
        "model:sum",
        "model:call(a)|call(b)",
        "user:resp(b={'v': 'b-new'})|resp(a={'v': 'a'})",
    ]


def test_recovery_uses_the_owning_call_when_ids_are_reused() -> None:
    old_call = event("e1", "agent", 100, [call("dup", args={"n": 1})])
    old_resp = event("e2", "agent", 101, [resp("dup", response={"r": 1})], role="user")
    new_call = event("e3", "agent", 102, [call("dup", args={"n": 2})], longRunningToolIds=["dup"])
    new_resp = event("e5", "agent", 105, [resp("dup", response={"r": 2})], role="user")
    source = [old_call, old_resp, new_call, summary_event("s1", 100, 102, 103, "sum"), new_resp]
    recovered = recover_compacted_calls(mask_compacted(source, "agent"), source)
    assert [e.id for e in recovered] == ["s1", "e3", "e5"]


def test_call_still_visible_is_not_recovered_twice() -> None:
    source = [
        event("e1", "agent", 100, [text("old")]),
        summary_event("s1", 100, 100, 101, "sum"),
        event("e2", "agent", 102, [call("c1")]),
        event("e3", "agent", 103, [resp("c1")], role="user"),
    ]
    recovered = recover_compacted_calls(mask_compacted(source, "agent"), source)
    assert [e.id for e in recovered] == ["s1", "e2", "e3"]


def test_an_idless_call_takes_no_sibling_response() -> None:
    # The restored call event's siblings follow in call order (b, then XXXX); the
    # id-less call owns no response, whatever ids its siblings have.
    source = [
        event("c", "agent", 101, [call(None, "a"), call("b"), call("XXXX"), call("d")]),
        event("rb", "agent", 102, [resp("b")], role="user"),
        event("rx", "agent", 103, [resp("XXXX")], role="user"),
        summary_event("s", 100, 103, 104, "sum"),
        event("rd", "agent", 105, [resp("d")], role="user"),
    ]
    masked = mask_compacted(source, "agent")
    assert [each.id for each in masked] == ["s", "rd"]
    recovered = recover_compacted_calls(masked, source)
    assert [each.id for each in recovered] == ["s", "c", "rb", "rx", "rd"]


def test_a_surviving_call_does_not_stop_the_recovery_of_the_events_other_calls() -> None:
    # r answers kA, whose call survives, then kB, whose call was summarized:
    # cB goes back right before r.
    c_b = event("cB", "agent", 101.0, [call("kB")])
    c_a = event("cA", "agent", 102.0, [call("kA")])
    answer = event("r", "agent", 103.0, [resp("kA"), resp("kB")], role="user")
    assert ids(recover_compacted_calls([c_a, answer], [c_b, c_a, answer])) == ["cA", "cB", "r"]


def test_a_sibling_response_shared_by_two_recovered_calls_comes_back_once() -> None:
    # c1 calls k1 and k2, c2 calls k3 and k4; s answers k2 and k4, r answers k1 and
    # k3. Only r survives: c1 comes back with s (k2's latest response), then c2,
    # whose sibling k4 is answered by s again, already back.
    c1 = event("c1", "agent", 101.0, [call("k1"), call("k2")])
    c2 = event("c2", "agent", 102.0, [call("k3"), call("k4")])
    s = event("s", "agent", 103.0, [resp("k2"), resp("k4")], role="user")
    r = event("r", "agent", 104.0, [resp("k1"), resp("k3")], role="user")
    assert ids(recover_compacted_calls([r], [c1, c2, s, r])) == ["c1", "s", "c2", "r"]
