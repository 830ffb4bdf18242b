"""Other agents' messages as quoted user context (reference §8.6)."""

from __future__ import annotations

from projections.contents.other_agents import (
    OTHER_AGENT_PREAMBLE,
    QUOTE_BEGIN,
    QUOTE_ELIDED,
    QUOTE_END,
    quote,
    quote_other_agent,
    quote_other_agents,
)
from schemas.event import MAX_ID_CHARS, Event
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


def test_the_quoted_event_keeps_timestamp_and_branch_and_derives_its_id() -> None:
    # Thoughts are left out unless asked for; the id is derived from the source's.
    source = event(
        "h1", "helper", 12.5, [thought("pondering"), text("hello")], branch="root.helper"
    )
    quoted = quote_other_agent(source)
    assert quoted is not None
    assert quoted.author == "user"
    assert (quoted.timestamp, quoted.branch) == (12.5, "root.helper")
    assert quoted.id not in ("", "h1")
    assert "h1" in quoted.id
    other = quote_other_agent(event("h2", "helper", 12.5, [text("hello")]))
    assert other is not None
    assert other.id != quoted.id
    assert quoted.content is not None
    quoted_texts = [part.text or "" for part in quoted.content.parts or []]
    assert quoted_texts[0] == OTHER_AGENT_PREAMBLE
    assert not any("pondering" in each for each in quoted_texts)


def test_other_agents_thoughts_are_left_out_unless_asked_for() -> None:
    events = [event("h1", "helper", 1.0, [thought("pondering"), text("hello")])]
    (quoted,) = quote_other_agents(events, "me")
    assert quoted.content is not None
    assert not any("pondering" in (part.text or "") for part in quoted.content.parts or [])
    (with_thoughts,) = quote_other_agents(events, "me", include_thoughts=True)
    assert with_thoughts.content is not None
    assert any("pondering" in (part.text or "") for part in with_thoughts.content.parts or [])


def test_a_quoted_event_has_only_its_five_fields_set_and_the_rest_default() -> None:
    source = event(
        "h1",
        "helper",
        3.0,
        [text("hello")],
        branch="root.helper",
        invocation_id="inv-1",
        turn_complete=True,
        usage_metadata={"prompt_token_count": 4},
    )
    quoted = quote_other_agent(source)
    assert quoted is not None
    expected = Event(
        id=quoted.id,
        author="user",
        timestamp=3.0,
        branch="root.helper",
        content=quoted.content,
    )
    assert quoted == expected
    assert quoted.model_fields_set == expected.model_fields_set


def test_an_event_with_the_longest_id_a_record_may_carry_is_quoted() -> None:
    # The derived id is longer than a stored id may be; it is never stored or sent.
    source = event("x" * MAX_ID_CHARS, "helper", 1.0, [text("hello")])
    quoted = quote_other_agent(source)
    assert quoted is not None
    assert quoted.id.endswith("x" * MAX_ID_CHARS)
    (shown,) = contents([source], agent_name="me")
    assert shown["parts"][-1]["text"] == f"[helper] said:\n{BEGIN}\nhello\n{END}"
