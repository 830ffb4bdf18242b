"""Spec audit, summaries in contents assembly (reference §3.2, §3.3, §8.3, §8.4).

Every scenario is built from the reference text; the expected request
contents were worked out by hand from the rules, not by running the code.
"""

from __future__ import annotations

from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, summary_event, text


def test_boundaries_are_inclusive_and_neighbours_stay() -> None:
    events = [
        event("e0", "user", 99.5, [text("before")]),
        event("e1", "user", 100, [text("start")]),
        event("e2", "agent", 101, [text("end")]),
        event("e3", "user", 101.5, [text("after")]),
        summary_event("s1", 100, 101, 102, "sum"),
    ]
    assert texts(events) == ["user:before", "model:sum", "user:after"]


def test_contained_summary_is_hidden_and_identical_ranges_keep_the_last() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        event("e3", "user", 102, [text("c")]),
        summary_event("s1", 100, 101, 103, "inner"),
        summary_event("s2", 100, 102, 104, "outer first"),
        summary_event("s3", 100, 102, 105, "outer second"),
        event("e4", "agent", 106, [text("d")]),
    ]
    assert texts(events) == ["model:outer second", "model:d"]


def test_partially_overlapping_summaries_both_show_at_their_ends() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        event("e3", "user", 102, [text("c")]),
        event("e4", "agent", 103, [text("d")]),
        event("e5", "user", 104, [text("e")]),
        summary_event("s2", 102, 103, 105, "second"),  # appended first, ends later
        summary_event("s1", 100, 102, 106, "first"),
    ]
    assert texts(events) == ["model:first", "model:second", "user:e"]


def test_resort_ties_keep_stream_order_and_inverted_range_sorts_by_end() -> None:
    events = [
        event("e1", "user", 103, [text("x")]),
        event("e2", "agent", 101, [text("y")]),
        summary_event("s1", 105, 103, 104, "inverted"),  # hides nothing, shown at 103
        event("e3", "user", 103, [text("z")]),
    ]
    # (timestamp, position): y@101, x@103 pos0, inverted@103 pos2, z@103 pos3.
    assert texts(events) == ["model:y", "user:x", "model:inverted", "user:z"]


def test_no_visible_summary_means_no_resort() -> None:
    events = [
        event("e1", "user", 103, [text("late")]),
        event("e2", "agent", 101, [text("early")]),
        summary_event("s1", 0, 1, 104, "hidden").model_copy(update={"branch": "root.other"}),
    ]
    assert texts(events, current_branch="root.me") == ["user:late", "model:early"]
    # Visible from an empty branch: it is kept and everything is re-sorted.
    assert texts(events) == ["model:hidden", "model:early", "user:late"]


def test_summary_on_invisible_branch_leaves_raw_events_visible() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")], branch="root.me"),
        summary_event("s1", 100, 101, 102, "theirs").model_copy(update={"branch": "root.sib"}),
        summary_event("s2", 100, 100, 103, "ours").model_copy(update={"branch": "root"}),
    ]
    assert texts(events, current_branch="root.me") == ["model:ours", "model:b"]


def test_summary_is_the_current_agents_own_turn() -> None:
    events = [
        event("e1", "helper", 100, [text("old")]),
        summary_event("s1", 100, 100, 101, "sum"),
    ]
    assert contents(events, agent_name="writer") == [{"role": "model", "parts": [{"text": "sum"}]}]
    assert contents(events, agent_name="") == [{"role": "model", "parts": [{"text": "sum"}]}]


def test_late_appended_summary_keeps_newer_raw_events() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        event("e3", "user", 102, [text("c")]),
        event("e4", "agent", 103, [text("d")]),
        summary_event("s1", 100, 101, 104, "sum of a b"),
    ]
    assert texts(events) == ["model:sum of a b", "user:c", "model:d"]


def test_disjoint_summaries_interleave_in_time() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        summary_event("s1", 100, 100, 101.5, "S1"),
        event("e3", "user", 102, [text("c")]),
        event("e4", "agent", 103, [text("d")]),
        summary_event("s2", 103, 103, 104, "S2"),
    ]
    assert texts(events) == ["model:S1", "model:b", "user:c", "model:S2"]


def test_summary_does_not_hide_events_by_id_only_by_time() -> None:
    # A raw event appended after the summary but stamped inside its range
    # is hidden too.
    events = [
        event("e1", "user", 100, [text("a")]),
        summary_event("s1", 100, 102, 103, "sum"),
        event("e2", "agent", 101, [text("late but inside")]),
        event("e3", "agent", 104, [text("outside")]),
    ]
    assert texts(events) == ["model:sum", "model:outside"]


# --- §8.4 recovering compacted calls --------------------------------------------


def test_recovered_call_goes_before_the_first_surviving_response_only_once() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("lr", "job")], longRunningToolIds=["lr"]),
        summary_event("s1", 100, 101, 102, "sum"),
        event("e3", "agent", 103, [resp("lr", "job", {"p": 1})], role="user"),
        event("e4", "agent", 104, [text("working")]),
        event("e5", "user", 105, [resp("lr", "job", {"p": 2})], inv="inv2"),
    ]
    # Recovery: S, call, r1, text, r2. The last event answers the call two
    # events back: everything after the call goes, r1 and r2 merge.
    assert texts(events) == ["model:sum", "model:call(lr)", "user:resp(lr={'p': 2})"]


def test_recovery_of_a_reused_id_takes_the_call_before_the_response() -> None:
    events = [
        event("e1", "agent", 100, [call("dup", "old_tool")]),
        event("e2", "agent", 101, [resp("dup", "old_tool")], role="user"),
        event("e3", "agent", 102, [call("dup", "new_tool")], longRunningToolIds=["dup"]),
        summary_event("s1", 100, 102, 103, "sum"),
        event("e4", "user", 104, [resp("dup", "new_tool", {"r": 2})], inv="inv2"),
    ]
    got = contents(events, preserve_function_call_ids=True)
    assert got == [
        {"role": "model", "parts": [{"text": "sum"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"id": "dup", "name": "new_tool", "args": {}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "dup", "name": "new_tool", "response": {"r": 2}}}
            ],
        },
    ]


def test_sibling_response_latest_by_timestamp_ties_to_the_later_one() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [call("a"), call("b"), call("c")], longRunningToolIds=["a"]),
        event("e3", "agent", 102, [resp("b", response={"v": "b1"})], role="user"),
        event("e4", "agent", 102, [resp("b", response={"v": "b2"})], role="user"),
        event("e5", "agent", 101.5, [resp("b", response={"v": "b0"})], role="user"),
        event("e6", "agent", 102.5, [resp("c", response={"v": "c1"})], role="user"),
        summary_event("s1", 100, 102.5, 103, "sum"),
        event("e7", "agent", 104, [resp("c", response={"v": "c2"})], role="user"),
        event("e8", "user", 105, [resp("a", response={"v": "a"})], inv="inv2"),
    ]
    # Masked: S, c2, a. Recovery before c2 (first surviving response to the
    # call event): call, then b's latest masked response (e4: ties at 102 go
    # to the later one); c still has a surviving response, so no sibling for c.
    # Pairing then merges everything after the call into one response event.
    assert texts(events) == [
        "model:sum",
        "model:call(a)|call(b)|call(c)",
        "user:resp(b={'v': 'b2'})|resp(c={'v': 'c2'})|resp(a={'v': 'a'})",
    ]


def test_visible_call_is_not_recovered() -> None:
    events = [
        event("e1", "user", 100, [text("old")]),
        event("e2", "agent", 103, [call("c1")]),
        summary_event("s1", 100, 101, 102, "sum"),
        event("e3", "agent", 104, [resp("c1")], role="user"),
    ]
    assert texts(events) == ["model:sum", "model:call(c1)", "user:resp(c1={'ok': 1})"]


def test_idless_surviving_response_recovers_nothing() -> None:
    events = [
        event("e1", "agent", 100, [call(None, "t")]),
        summary_event("s1", 100, 100, 101, "sum"),
        event("e2", "agent", 102, [resp(None, "t")], role="user"),
    ]
    # No id: no recovery; the id-less response then has no id-less call
    # before it and is pruned (§8.7 step 1).
    assert texts(events) == ["model:sum"]


def test_ownership_is_decided_before_restoring() -> None:
    # The second "dup" call is appended after the first response but stamped
    # earlier; both calls are summarized away. Each surviving response gets
    # the call that precedes it in the stream: restoring the first call must
    # not make it the owner of the second response.
    events = [
        event("e1", "agent", 100, [call("dup", "t", {"n": 1})], longRunningToolIds=["dup"]),
        event("e2", "agent", 102, [resp("dup", "t", {"r": 1})], role="user"),
        event("e3", "agent", 101, [call("dup", "t", {"n": 2})], longRunningToolIds=["dup"]),
        summary_event("s1", 100, 101, 101.5, "sum"),
        event("e4", "agent", 103, [resp("dup", "t", {"r": 2})], role="user"),
    ]
    got = contents(events, preserve_function_call_ids=True)
    assert got == [
        {"role": "model", "parts": [{"text": "sum"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"id": "dup", "name": "t", "args": {"n": 1}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "dup", "name": "t", "response": {"r": 1}}}],
        },
        {
            "role": "model",
            "parts": [{"functionCall": {"id": "dup", "name": "t", "args": {"n": 2}}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "dup", "name": "t", "response": {"r": 2}}}],
        },
    ]


def test_summaries_at_the_start_middle_and_end() -> None:
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        event("e3", "user", 102, [text("c")]),
        event("e4", "agent", 103, [text("d")]),
        event("e5", "user", 104, [text("e")]),
        event("e6", "agent", 105, [text("f")]),
        summary_event("s3", 105, 105, 106, "S3"),
        summary_event("s1", 100, 100, 107, "S1"),
        summary_event("s2", 102, 103, 108, "S2"),
    ]
    assert texts(events) == ["model:S1", "model:b", "model:S2", "user:e", "model:S3"]


def test_after_compaction_pending_long_running_call_stays_plain_one_goes() -> None:
    events = [
        event("e1", "user", 100, [text("old")]),
        summary_event("s1", 100, 100, 100.5, "sum"),
        event(
            "e2", "agent", 101, [call("lr", "job"), call("p", "plain")], longRunningToolIds=["lr"]
        ),
        event("e3", "agent", 102, [text("waiting")]),
    ]
    assert texts(events) == ["model:sum", "model:call(lr)", "model:waiting"]


def test_parallel_branches_out_of_timestamp_order_keep_their_pairs() -> None:
    events = [
        event("e0", "user", 100, [text("go")]),
        event("a1", "agent", 101, [call("ca")], branch="root.a"),
        event("a2", "agent", 103, [resp("ca")], role="user", branch="root.a"),
        event("b1", "agent", 102, [call("cb")], branch="root.b"),
        event("b2", "agent", 104, [resp("cb")], role="user", branch="root.b"),
        event("e9", "agent", 105, [text("both done")], branch="root"),
        summary_event("s1", 100, 100, 100.5, "sum"),
    ]
    # Re-sorted: ca@101, cb@102, ra@103, rb@104; each response then moves
    # right after its call (§8.7 step 3).
    assert texts(events, current_branch=None) == [
        "model:sum",
        "model:call(ca)",
        "user:resp(ca={'ok': 1})",
        "model:call(cb)",
        "user:resp(cb={'ok': 1})",
        "model:both done",
    ]
