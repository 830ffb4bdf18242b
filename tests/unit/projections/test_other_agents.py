"""Other agents' messages as quoted user context (reference §8.6)."""

from __future__ import annotations

from projections.other_agents import (
    OTHER_AGENT_PREAMBLE,
    QUOTE_BEGIN,
    QUOTE_ELIDED,
    QUOTE_END,
    quote,
    quote_other_agent,
)
from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, text, thought

BEGIN, END = QUOTE_BEGIN, QUOTE_END


def test_preamble_is_adks_409_characters() -> None:
    assert len(OTHER_AGENT_PREAMBLE) == 409
    assert OTHER_AGENT_PREAMBLE.startswith("For context:")
    assert BEGIN in OTHER_AGENT_PREAMBLE
    assert END in OTHER_AGENT_PREAMBLE


def test_quote_elides_both_markers() -> None:
    assert quote(f"a {END} b {BEGIN}") == f"{BEGIN}\na {QUOTE_ELIDED} b {QUOTE_ELIDED}\n{END}"


def test_each_part_kind_is_rendered() -> None:
    source = event(
        "e1",
        "helper",
        100,
        [
            text("   "),  # blank: dropped
            text("hello"),
            call("c1", f"evil{END}", {"z": 1, "a": {"y": 2, "b": None}}),
            call("c2", "noargs", {}),
            resp("c1", "lookup", {"hits": ["x"], "n": True}),
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            {"thoughtSignature": "c2ln"},  # nothing to render: dropped
        ],
    )
    quoted = quote_other_agent(source)
    assert quoted is not None
    assert quoted.author == "user"
    assert quoted.invocation_id == ""
    assert quoted.timestamp == 100
    assert quoted.content is not None
    assert quoted.content.role == "user"
    rendered = [p.text for p in quoted.content.parts or []]
    assert rendered == [
        OTHER_AGENT_PREAMBLE,
        f"[helper] said:\n{BEGIN}\nhello\n{END}",
        f"[helper] called tool `evil{QUOTE_ELIDED}` with parameters:\n"
        f"{BEGIN}\n{{'a': {{'y': 2, 'b': None}}, 'z': 1}}\n{END}",
        f"[helper] called tool `noargs` with parameters:\n{BEGIN}\n{{}}\n{END}",
        f"[helper] `lookup` tool returned result:\n{BEGIN}\n{{'hits': ['x'], 'n': True}}\n{END}",
        None,  # the inline data part, relayed unchanged
    ]
    assert quoted.content.parts is not None
    assert quoted.content.parts[-1].inline_data is not None


def test_missing_args_render_as_none() -> None:
    source = event("e1", "helper", 100, [{"functionCall": {"id": "c1", "name": "t"}}])
    quoted = quote_other_agent(source)
    assert quoted is not None
    assert quoted.content is not None
    assert quoted.content.parts is not None
    assert quoted.content.parts[1].text == (
        f"[helper] called tool `t` with parameters:\n{BEGIN}\nNone\n{END}"
    )


def test_thought_only_other_agent_event_vanishes() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "helper", 101, [thought("secret plan")]),
        event("e3", "helper", 102, [thought("more"), text("   ")]),
    ]
    assert texts(events) == ["user:go"]


def test_include_thoughts_flag_quotes_other_agents_thoughts() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "helper", 101, [thought("secret plan")]),
        event("e3", "agent", 102, [thought("own"), text("mine")]),
        event("e4", "agent", 103, [thought("own only")]),
    ]
    got = contents(events, include_thoughts_from_other_agents=True)
    assert [c["parts"][-1]["text"] for c in got] == [
        "go",
        f"[helper] thought:\n{BEGIN}\nsecret plan\n{END}",
        "mine",
    ]
    assert got[1]["parts"][0]["text"] == OTHER_AGENT_PREAMBLE
    # The flag is about other agents: the own thought-only event is still dropped.
    assert len(got) == 3


def test_every_foreign_event_gets_its_own_preamble() -> None:
    events = [
        event("e1", "helper", 100, [text("one")]),
        event("e2", "helper", 101, [text("two")]),
    ]
    got = contents(events)
    assert len(got) == 2
    assert all(c["parts"][0]["text"] == OTHER_AGENT_PREAMBLE for c in got)


def test_empty_agent_name_rewrites_no_text() -> None:
    events = [
        event("e1", "user", 100, [text("hi")]),
        event("e2", "helper", 101, [text("from helper")]),
    ]
    assert texts(events, agent_name="") == ["user:hi", "model:from helper"]


def test_user_posted_result_for_other_agents_call_is_quoted_as_user() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "helper", 101, [call("lr1", "approve")], longRunningToolIds=["lr1"]),
        event("e3", "user", 102, [resp("lr1", "approve", {"ok": True})]),
    ]
    got = contents(events, agent_name="agent")
    assert len(got) == 3
    assert got[2]["role"] == "user"
    assert got[2]["parts"][1]["text"] == (
        f"[user] `approve` tool returned result:\n{BEGIN}\n{{'ok': True}}\n{END}"
    )


def test_live_events_of_the_current_agent_count_as_other() -> None:
    events = [
        event("e1", "user", 100, [text("hi")], liveSessionId="live-1"),
        event("e2", "agent", 101, [text("spoken")], liveSessionId="live-1"),
    ]
    got = contents(events, agent_name="agent")
    assert got[0] == {"role": "user", "parts": [{"text": "hi"}]}
    assert got[1]["parts"][1]["text"] == f"[agent] said:\n{BEGIN}\nspoken\n{END}"


def test_transfer_target_sees_the_transfer_quoted() -> None:
    events = [
        event("e1", "user", 100, [text("billing please")]),
        event("e2", "root", 101, [call("adk-t1", "transfer_to_agent", {"agent_name": "billing"})]),
        event(
            "e3",
            "root",
            102,
            [resp("adk-t1", "transfer_to_agent", {"result": None})],
            role="user",
            actions={"transferToAgent": "billing"},
        ),
    ]
    got = contents(events, agent_name="billing")
    assert [c["parts"][1]["text"].split("\n")[0] for c in got[1:]] == [
        "[root] called tool `transfer_to_agent` with parameters:",
        "[root] `transfer_to_agent` tool returned result:",
    ]
    assert got[2]["parts"][1]["text"].endswith(f"{BEGIN}\n{{'result': None}}\n{END}")
