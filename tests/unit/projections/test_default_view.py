"""The projection's view, its snapshot and its stored bytes follow the agent that runs next.

A tool-using agent's session, with no root agent configured, reads as that
agent's own: its calls and results stay function parts instead of being
quoted as another agent's transcript, and the snapshot's count and
fingerprint describe that context.
"""

from __future__ import annotations

import struct
from typing import Final

import orjson

from projections.contents.assembly import ContentsRequest, build_contents
from projections.contents.snapshot import context_fingerprint, to_snapshot
from projections.fold.projection import (
    configured_view_request,
    context_contents,
    default_agent,
    empty_projection,
    project,
)
from projections.retention.state_codec import MARK, decode_state, encode_state
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import SESSION, call, event, logged, resp

AGENT: Final = "shop_agent"


def _tool_session() -> list[LoggedEvent]:
    events = [
        event("e0", "user", 0.0, [{"text": "where is order 42?"}], inv="i1"),
        event("e1", AGENT, 1.0, [call("c1", "lookup_order", {"id": 42})], inv="i1"),
        event("e2", AGENT, 2.0, [resp("c1", "lookup_order")], role="user", inv="i1"),
        event("e3", AGENT, 3.0, [{"text": "it shipped"}], inv="i1"),
        event("e4", "user", 4.0, [{"text": "thanks"}], inv="i2"),
    ]
    return logged(events, range(len(events)))


def _live(records: list[LoggedEvent]) -> list[Event]:
    return [record.envelope.event for record in records]


def test_a_tool_using_agents_default_view_is_its_own() -> None:
    records = _tool_session()
    projection = project(SESSION, records, empty_projection(SESSION, ContentsRequest()))
    assert default_agent(projection) == AGENT
    assert projection.view.request == ContentsRequest(agent_name=AGENT)
    assert configured_view_request(projection) == ContentsRequest()
    contents = context_contents(projection)
    assert contents == build_contents(_live(records), ContentsRequest(agent_name=AGENT))
    parts = [part for content in contents for part in content.parts or []]
    assert [p.function_call.name for p in parts if p.function_call] == ["lookup_order"]
    assert [p.function_response.name for p in parts if p.function_response] == ["lookup_order"]
    assert not any(p.text and "For context" in p.text for p in parts)
    snapshot = to_snapshot(projection)
    quoted = build_contents(_live(records), ContentsRequest(agent_name="another"))
    assert (snapshot.context_items, snapshot.context_fingerprint) == (
        len(contents),
        context_fingerprint(contents),
    )
    assert snapshot.context_fingerprint != context_fingerprint(quoted)


def test_a_configured_root_serves_until_an_agent_replies() -> None:
    records = _tool_session()
    start = empty_projection(SESSION, ContentsRequest(agent_name="router"))
    first = project(SESSION, records[:1], start)
    assert default_agent(first) == "router"
    assert first.view.request.agent_name == "router"
    after = project(SESSION, records[1:], first)
    assert after.view.request.agent_name == AGENT
    assert configured_view_request(after) == ContentsRequest(agent_name="router")


def test_state_stored_before_the_trail_decodes_with_the_view_for_the_next_agent() -> None:
    records = _tool_session()
    projection = project(SESSION, records, empty_projection(SESSION, ContentsRequest()))
    raw = encode_state(projection)
    # The bytes an older ctxstream stored: no trail, the view for the configured root ("").
    document = orjson.loads(raw[len(MARK) + 4 : len(MARK) + 4 + _length(raw)])
    del document["next_agent"]
    document["view"]["request"][0] = ""
    body = orjson.dumps(document)
    legacy = MARK + struct.pack(">I", len(body)) + body + raw[len(MARK) + 4 + _length(raw) :]
    assert decode_state(legacy) == projection
    assert decode_state(raw) == projection


def _length(raw: bytes) -> int:
    (length,) = struct.unpack_from(">I", raw, len(MARK))
    return int(length)


def _legacy(projection_raw: bytes) -> bytes:
    """`projection_raw` as an older ctxstream stored it: no trail, the view as it is."""
    document = orjson.loads(projection_raw[len(MARK) + 4 : len(MARK) + 4 + _length(projection_raw)])
    del document["next_agent"]
    body = orjson.dumps(document)
    rest = projection_raw[len(MARK) + 4 + _length(projection_raw) :]
    return MARK + struct.pack(">I", len(body)) + body + rest


def test_state_stored_before_the_trail_keeps_its_view_when_the_next_agent_is_its_own() -> None:
    # No agent replied yet: the next agent is the configured root, whom the stored view serves.
    records = _tool_session()[:1]
    projection = project(SESSION, records, empty_projection(SESSION, ContentsRequest("router")))
    assert default_agent(projection) == "router"

    decoded = decode_state(_legacy(encode_state(projection)))

    assert decoded == projection
    assert decoded.view == projection.view


def test_a_sealed_trail_is_stored_and_read_back_sealed() -> None:
    aborted = event("e1", AGENT, 1.0, [{"text": "stopped"}], inv="i1")
    aborted = aborted.model_copy(update={"error_code": "INVOCATION_ABORTED"})
    records = logged([*_live(_tool_session()[:1]), aborted], range(2))
    projection = project(SESSION, records, empty_projection(SESSION, ContentsRequest()))
    assert projection.next_agent.sealed

    assert decode_state(encode_state(projection)).next_agent == projection.next_agent
