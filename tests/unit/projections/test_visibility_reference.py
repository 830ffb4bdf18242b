"""Spec audit, contents inclusion filter (reference §1.3, §3.1, §8.1, §8.2, §8.8).

Every scenario is built from the reference text; the expected request
contents were worked out by hand from the rules, not by running the code.
"""

from __future__ import annotations

from projections.contents.other_agents import OTHER_AGENT_PREAMBLE, QUOTE_BEGIN, QUOTE_END
from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, rewind_event, summary_event, text, thought

BEGIN, END = QUOTE_BEGIN, QUOTE_END


def _said(author: str, value: str) -> str:
    return f"[{author}] said:\n{BEGIN}\n{value}\n{END}"


# --- §1.3 / §14.7: partial events -------------------------------------------


def test_partial_chunks_of_own_and_other_agents_are_kept() -> None:
    events = [
        event("e1", "user", 100, [text("hi")]),
        event("e2", "agent", 101, [text("Hel")], partial=True),
        event("e3", "helper", 102, [text("par")], partial=True),
    ]
    got = contents(events)
    assert got[0] == {"role": "user", "parts": [{"text": "hi"}]}
    assert got[1] == {"role": "model", "parts": [{"text": "Hel"}]}
    assert got[2] == {
        "role": "user",
        "parts": [{"text": OTHER_AGENT_PREAMBLE}, {"text": _said("helper", "par")}],
    }


def test_partial_thought_only_chunk_is_still_empty() -> None:
    events = [
        event("e1", "user", 100, [text("hi")]),
        event("e2", "agent", 101, [thought("mulling")], partial=True),
    ]
    assert texts(events) == ["user:hi"]


# --- §8.2 rule 3: emptiness -------------------------------------------------


def test_every_kind_of_empty_event_is_dropped() -> None:
    role_less = event("e5", "agent", 105, [text("no role")])
    assert role_less.content is not None
    role_less = role_less.model_copy(
        update={"content": role_less.content.model_copy(update={"role": None})}
    )
    events = [
        event("e1", "user", 100, [text("start")]),
        event("e2", "agent", 101, [thought("just thinking")]),
        event("e3", "agent", 102, [text("")]),
        event("e4", "agent", 103, None, actions={"stateDelta": {"k": 1}}),
        event("e4b", "agent", 104, []),
        role_less,
        event("e6", "agent", 106, [{"videoMetadata": {"fps": 1}}]),  # unknown kind only
        event("e7", "agent", 107, [thought("t1"), thought("t2"), text("")]),
        event("e8", "user", 108, [text("end")]),
    ]
    assert texts(events) == ["user:start", "user:end"]


def test_whitespace_only_own_text_is_not_empty() -> None:
    # "Empty" is no text at all: a blank string is still text (only quoting
    # drops blank texts), so the own event stays, verbatim.
    events = [event("e1", "user", 100, [text("q")]), event("e2", "agent", 101, [text("  \n")])]
    assert contents(events)[1] == {"role": "model", "parts": [{"text": "  \n"}]}


def test_thought_signature_only_part_keeps_its_event_verbatim() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "agent", 101, [{"thoughtSignature": "c2lnbmF0dXJl"}]),
        event("e3", "agent", 102, [thought("plan"), text("answer")]),
    ]
    got = contents(events)
    assert got == [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": [{"thoughtSignature": "c2lnbmF0dXJl"}]},
        # Own thoughts are kept in the copy (§8.8).
        {"role": "model", "parts": [{"text": "plan", "thought": True}, {"text": "answer"}]},
    ]


def test_thought_with_a_signature_keeps_its_event() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "agent", 101, [{"text": "t", "thought": True, "thoughtSignature": "c2ln"}]),
    ]
    assert contents(events)[1] == {
        "role": "model",
        "parts": [{"text": "t", "thought": True, "thoughtSignature": "c2ln"}],
    }


def test_server_side_tool_traffic_and_media_keep_their_events() -> None:
    events = [
        event("e1", "agent", 100, [{"toolCall": {"name": "search"}}]),
        event("e2", "agent", 101, [{"toolResponse": {"name": "search"}}]),
        event("e3", "user", 102, [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]),
        event("e4", "user", 103, [{"fileData": {"fileUri": "gs://b/f", "mimeType": "a/b"}}]),
        event("e5", "agent", 104, [{"executableCode": {"code": "1", "language": "PYTHON"}}]),
        event("e6", "agent", 105, [{"codeExecutionResult": {"outcome": "OUTCOME_OK"}}]),
    ]
    assert len(contents(events)) == 6


def test_thought_marked_function_call_is_visible() -> None:
    marked = {**call("c1"), "thought": True}
    events = [
        event("e1", "agent", 100, [marked]),
        event("e2", "agent", 101, [resp("c1")], role="user"),
    ]
    assert texts(events) == ["model:call(c1)", "user:resp(c1={'ok': 1})"]


def test_other_agent_thoughts_hidden_without_the_flag() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "helper", 101, [thought("secret")]),
        event("e3", "helper", 102, [thought("secret 2"), text("public")]),
    ]
    got = contents(events)
    assert len(got) == 2
    assert got[1]["parts"] == [{"text": OTHER_AGENT_PREAMBLE}, {"text": _said("helper", "public")}]


def test_other_agent_thoughts_quoted_with_the_flag() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "helper", 101, [thought("idea"), text("public")]),
        event("e3", "helper", 102, [thought("   ")]),  # blank thought: nothing left
    ]
    got = contents(events, include_thoughts_from_other_agents=True)
    assert len(got) == 2
    assert got[1]["parts"] == [
        {"text": OTHER_AGENT_PREAMBLE},
        {"text": f"[helper] thought:\n{BEGIN}\nidea\n{END}"},
        {"text": _said("helper", "public")},
    ]


def test_thoughts_flag_does_not_reveal_own_thought_only_events() -> None:
    events = [event("e1", "user", 100, [text("q")]), event("e2", "agent", 101, [thought("me")])]
    assert texts(events, include_thoughts_from_other_agents=True) == ["user:q"]


def test_thoughts_flag_applies_to_own_live_events() -> None:
    # Live events of the current agent count as another agent's reply.
    events = [event("e1", "agent", 100, [thought("live idea")], liveSessionId="L1")]
    got = contents(events, include_thoughts_from_other_agents=True)
    assert got == [
        {
            "role": "user",
            "parts": [
                {"text": OTHER_AGENT_PREAMBLE},
                {"text": f"[agent] thought:\n{BEGIN}\nlive idea\n{END}"},
            ],
        }
    ]
    assert contents(events) == []


# --- §8.2 rule 1: scope ----------------------------------------------------


def test_scope_equality_applies_to_summaries_too() -> None:
    scoped_summary = summary_event("s1", 100, 101, 102, "scoped sum").model_copy(
        update={"isolation_scope": "fc-1"}
    )
    events = [
        event("e1", "user", 100, [text("a")]),
        event("e2", "agent", 101, [text("b")]),
        scoped_summary,
        event("e3", "agent", 103, [text("scoped")], isolationScope="fc-1"),
    ]
    assert texts(events) == ["user:a", "model:b"]
    assert texts(events, isolation_scope="fc-1") == ["model:scoped sum", "model:scoped"]
    assert texts(events, isolation_scope="fc-2") == []


# --- §8.2 rule 2: workflow user input ---------------------------------------


def test_workflow_user_input_rules() -> None:
    node = {"path": "wf@1/node@2"}
    events = [
        event("e1", "user", 100, [text("to a node")], nodeInfo=node),
        event("e2", "agent", 101, [call("c1")], nodeInfo=node),
        event("e3", "user", 102, [resp("c1")], nodeInfo=node),  # has a response: kept
        event("e4", "agent", 103, [text("agent in node")], nodeInfo=node),  # not user: kept
        event("e5", "user", 104, [text("plain")], nodeInfo={"path": ""}),
    ]
    assert texts(events) == [
        "model:call(c1)",
        "user:resp(c1={'ok': 1})",
        "model:agent in node",
        "user:plain",
    ]


# --- §8.2 rule 4: branches --------------------------------------------------


def test_branch_segments_siblings_descendants_and_lookalikes() -> None:
    events = [
        event("e1", "user", 100, [text("root user")]),  # no branch: always visible
        event("e2", "root", 101, [text("root")], branch="root"),
        event("e3", "child", 102, [text("child")], branch="root.child"),
        event("e4", "child000", 103, [text("lookalike")], branch="root.child000"),
        event("e5", "grand", 104, [text("grandchild")], branch="root.child.grand"),
        event("e6", "sib", 105, [text("sibling")], branch="root.sib"),
        event("e7", "x", 106, [text("other tree")], branch="other"),
        event("e8", "child", 107, [text("empty branch")], branch=""),
    ]
    got = texts(events, agent_name="child", current_branch="root.child")
    assert got == [
        "user:root user",
        f"user:{OTHER_AGENT_PREAMBLE}|{_said('root', 'root')}",
        "model:child",
        "model:empty branch",
    ]
    lookalike = texts(events, agent_name="child000", current_branch="root.child000")
    assert lookalike == [
        "user:root user",
        f"user:{OTHER_AGENT_PREAMBLE}|{_said('root', 'root')}",
        "model:lookalike",
        f"user:{OTHER_AGENT_PREAMBLE}|{_said('child', 'empty branch')}",
    ]


def test_no_current_branch_sees_every_branch() -> None:
    events = [
        event("e1", "a", 100, [text("1")], branch="x.y"),
        event("e2", "a", 101, [text("2")], branch="z"),
    ]
    assert texts(events, agent_name="a", current_branch=None) == ["model:1", "model:2"]
    assert texts(events, agent_name="a", current_branch="") == ["model:1", "model:2"]


# --- §8.2 rule 5: framework / auth / confirmation traffic -------------------


def test_hidden_traffic_goes_whole_but_request_input_stays() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [text("asking"), call("c1", "adk_request_confirmation")]),
        event("e3", "user", 102, [resp("c1", "adk_request_confirmation"), text("yes")]),
        event("e4", "agent", 103, [resp("f1", "adk_framework")], role="user"),
        event("e5", "agent", 104, [call("c2", "adk_request_credential"), call("c3", "real")]),
        event("e6", "agent", 105, [call("i1", "adk_request_input")]),
        event("e7", "user", 106, [resp("i1", "adk_request_input")]),
    ]
    assert texts(events) == ["user:go", "model:call(i1)", "user:resp(i1={'ok': 1})"]


# --- §8.2 rule 6: tool progress ---------------------------------------------


def test_tool_progress_needs_a_live_call_id_and_another_name() -> None:
    events = [
        event("e1", "user", 100, [text("go")], inv="old"),
        event("e2", "agent", 101, [call("dead", "t")], inv="old"),
        rewind_event("rw", "old", 102),
        event("e3", "user", 103, [text("again")], inv="inv2"),
        event("e4", "agent", 104, [call("w1", "wf")], inv="inv2"),
        event("e4r", "agent", 104.5, [resp("w1", "wf")], role="user", inv="inv2"),
        event("e5", "agent", 105, [call("sc", "t")], inv="inv2", isolationScope="other"),
        event("e6", "agent", 106, [text("progress")], inv="inv2", branch="wf@w1"),
        event("e7", "agent", 107, [text("deep progress")], inv="inv2", branch="x.wf@w1.y"),
        event("e8", "agent", 108, [text("rewound id")], inv="inv2", branch="t@dead"),
        event("e9", "agent", 109, [text("scoped id")], inv="inv2", branch="t@sc"),
        event("e10", "agent", 110, [text("own name")], inv="inv2", branch="agent@w1"),
    ]
    assert texts(events, current_branch=None) == [
        "user:again",
        "model:call(w1)",
        "user:resp(w1={'ok': 1})",
        "model:rewound id",
        "model:own name",
    ]


def test_tool_progress_below_a_named_current_branch() -> None:
    # Below a named branch the event is a descendant and hidden anyway; the
    # agent that itself runs on the tool branch keeps its own history.
    events = [
        event("e1", "agent", 100, [call("c1", "wf")], branch="root"),
        event("e2", "inner", 101, [text("inner work")], branch="root.wf@c1"),
        event("e3", "agent", 102, [resp("c1", "wf")], role="user", branch="root"),
    ]
    assert texts(events, agent_name="inner", current_branch="root.wf@c1") == [
        f"user:{OTHER_AGENT_PREAMBLE}|[agent] called tool `wf` with parameters:\n"
        f"{BEGIN}\n{{}}\n{END}",
        "model:inner work",
        f"user:{OTHER_AGENT_PREAMBLE}|[agent] `wf` tool returned result:\n"
        f"{BEGIN}\n{{'ok': 1}}\n{END}",
    ]


# --- §3.1 / §8.1: rewind -------------------------------------------------------


def test_rewind_drops_the_span_and_inner_rewinds() -> None:
    events = [
        event("e1", "user", 100, [text("a")], inv="i1"),
        event("e2", "user", 101, [text("b")], inv="i2"),
        rewind_event("r1", "zzz", 102),  # unknown target: only itself goes
        event("e3", "user", 103, [text("c")], inv="i3"),
        rewind_event("r2", "i2", 104),  # inside r3's span: no effect
        event("e4", "user", 105, [text("d")], inv="i4"),
        rewind_event("r3", "i2", 106),
        event("e5", "user", 107, [text("e")], inv="i5"),
        rewind_event("r4", "i9", 108),  # target first appears later: only itself
        event("e6", "user", 109, [text("f")], inv="i9"),
    ]
    assert texts(events) == ["user:a", "user:e", "user:f"]


def test_rewound_summary_uncovers_its_raw_events() -> None:
    events = [
        event("e1", "user", 100, [text("a")], inv="i1"),
        event("e2", "agent", 101, [text("b")], inv="i1"),
        event("e3", "user", 102, [text("c")], inv="i2"),
        summary_event("s1", 100, 101, 103, "sum").model_copy(update={"invocation_id": "i2"}),
        rewind_event("r1", "i2", 104),
    ]
    assert texts(events) == ["user:a", "model:b"]


# --- §8.8: id stripping ---------------------------------------------------------


def test_only_the_exact_adk_dash_prefix_is_stripped() -> None:
    events = [
        event("e1", "agent", 100, [call("adk-x"), call("ADK-y"), call("adkz"), call("c-adk-")]),
        event(
            "e2",
            "agent",
            101,
            [resp("adk-x"), resp("ADK-y"), resp("adkz"), resp("c-adk-")],
            role="user",
        ),
    ]
    got = contents(events)
    assert [p["functionCall"].get("id") for p in got[0]["parts"]] == [
        None,
        "ADK-y",
        "adkz",
        "c-adk-",
    ]
    assert [p["functionResponse"].get("id") for p in got[1]["parts"]] == [
        None,
        "ADK-y",
        "adkz",
        "c-adk-",
    ]
    preserved = contents(events, preserve_function_call_ids=True)
    assert preserved[0]["parts"][0]["functionCall"]["id"] == "adk-x"
    assert preserved[1]["parts"][0]["functionResponse"]["id"] == "adk-x"


# --- §8.9: scoped agents -------------------------------------------------------


def test_scoped_agent_gets_its_task_as_the_first_user_content() -> None:
    events = [
        event("e1", "user", 100, [text("plan a trip")]),
        event("e2", "coord", 101, [call("task-1", "delegate", {"goal": "Zürich", "days": 2})]),
        event("e3", "worker", 102, [text("on it")], isolationScope="task-1"),
    ]
    got = contents(events, agent_name="worker", isolation_scope="task-1")
    assert got == [
        {"role": "user", "parts": [{"text": '{"goal": "Zürich", "days": 2}'}]},
        {"role": "model", "parts": [{"text": "on it"}]},
    ]
    # No delegating call with that id: nothing is put first.
    assert contents(events, agent_name="worker", isolation_scope="task-2") == []
    # Unscoped agents never get one.
    assert contents(events, agent_name="worker")[0] == {
        "role": "user",
        "parts": [{"text": "plan a trip"}],
    }
