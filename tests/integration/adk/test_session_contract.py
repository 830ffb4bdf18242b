"""ADK's session service contract: one suite, run unchanged on ADK's in-memory service and ours.

Each test is parametrized by ``session_service`` (conftest): first ADK's own
``InMemorySessionService``, the oracle, then ``ctxstream.adk.SessionService`` on a real
broker, projector, sink and PostgreSQL. Expected values are written from ADK's
documented behaviour, and the in-memory run shows they are ADK's.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from pydantic import Field

pytestmark = pytest.mark.integration

USER = "u1"


def _text(author: str, text: str, timestamp: float, **fields: Any) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        invocation_id=fields.pop("invocation_id", "inv-1"),
        timestamp=timestamp,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        **fields,
    )


async def _created(service: BaseSessionService, app: str, **state: object) -> Session:
    return await service.create_session(
        app_name=app, user_id=USER, session_id=f"s-{uuid.uuid4().hex[:8]}", state=dict(state)
    )


async def test_create_then_get_scopes_state_and_holds_no_events(
    session_service: BaseSessionService, app_name: str
) -> None:
    state = {"a": 1, "app:b": [2], "user:c": {"d": "e"}, "temp:t": 4}
    created = await session_service.create_session(
        app_name=app_name, user_id=USER, session_id="s1", state=state
    )
    expected = {"a": 1, "app:b": [2], "user:c": {"d": "e"}}
    assert (created.id, created.app_name, created.user_id) == ("s1", app_name, USER)
    assert created.state == expected
    assert created.events == []
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id="s1")
    assert got is not None
    assert got.state == expected
    assert got.events == []
    assert await session_service.get_user_state(app_name=app_name, user_id=USER) == {
        "c": {"d": "e"}
    }
    assert await session_service.get_user_state(app_name=app_name, user_id="nobody") == {}


async def test_create_without_id_gives_a_fresh_one(
    session_service: BaseSessionService, app_name: str
) -> None:
    first = await session_service.create_session(app_name=app_name, user_id=USER)
    second = await session_service.create_session(app_name=app_name, user_id=USER)
    assert first.id != second.id
    assert str(uuid.UUID(first.id)) == first.id
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id=first.id)
    assert got is not None
    assert got.id == first.id


async def test_a_taken_id_and_an_absent_session(
    session_service: BaseSessionService, app_name: str
) -> None:
    await session_service.create_session(app_name=app_name, user_id=USER, session_id="taken")
    with pytest.raises(AlreadyExistsError):
        await session_service.create_session(app_name=app_name, user_id=USER, session_id="taken")
    assert (
        await session_service.get_session(app_name=app_name, user_id=USER, session_id="absent")
        is None
    )
    assert (
        await session_service.get_session(app_name=app_name, user_id="other", session_id="taken")
        is None
    )


async def test_concurrent_creates_of_one_id_have_one_winner(
    session_service: BaseSessionService, app_name: str
) -> None:
    outcomes = await asyncio.gather(
        *(
            session_service.create_session(
                app_name=app_name, user_id=USER, session_id="race", state={"n": n}
            )
            for n in range(4)
        ),
        return_exceptions=True,
    )
    won = [o for o in outcomes if isinstance(o, Session)]
    lost = [o for o in outcomes if isinstance(o, AlreadyExistsError)]
    assert (len(won), len(lost)) == (1, 3), outcomes
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id="race")
    assert got is not None
    assert got.state == won[0].state


async def test_list_sessions_oldest_update_first_without_events(
    session_service: BaseSessionService, app_name: str
) -> None:
    now = time.time()
    made = {}
    for user, session_id in (("u1", "a"), ("u2", "b"), ("u1", "c")):
        made[session_id] = await session_service.create_session(
            app_name=app_name, user_id=user, session_id=session_id, state={"k": session_id}
        )
    # Updates in the order c, a, b: the listing follows the last update, not creation.
    for offset, session_id in enumerate(("c", "a", "b")):
        event = _text("user", f"hi {session_id}", now + 10 + offset)
        event.actions = EventActions(state_delta={"user:seen": session_id})
        await session_service.append_event(made[session_id], event)
    listed = await session_service.list_sessions(app_name=app_name)
    assert [(s.user_id, s.id) for s in listed.sessions] == [("u1", "c"), ("u1", "a"), ("u2", "b")]
    assert [s.last_update_time for s in listed.sessions] == [now + 10, now + 11, now + 12]
    assert all(s.events == [] for s in listed.sessions)
    assert [s.state for s in listed.sessions] == [
        {"k": "c", "user:seen": "a"},
        {"k": "a", "user:seen": "a"},
        {"k": "b", "user:seen": "b"},
    ]
    of_u2 = await session_service.list_sessions(app_name=app_name, user_id="u2")
    assert [s.id for s in of_u2.sessions] == ["b"]
    empty = await session_service.list_sessions(app_name=app_name, user_id="nobody")
    assert empty.sessions == []


async def test_delete_then_get_none_and_recreate_empty(
    session_service: BaseSessionService, app_name: str
) -> None:
    session = await session_service.create_session(
        app_name=app_name, user_id=USER, session_id="d", state={"own": 1}
    )
    await session_service.append_event(session, _text("user", "hello", time.time()))
    await session_service.delete_session(app_name=app_name, user_id=USER, session_id="d")
    assert (
        await session_service.get_session(app_name=app_name, user_id=USER, session_id="d") is None
    )
    assert (await session_service.list_sessions(app_name=app_name)).sessions == []
    again = await session_service.create_session(app_name=app_name, user_id=USER, session_id="d")
    assert again.state == {}
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id="d")
    assert got is not None
    assert got.events == []
    assert got.state == {}


async def test_append_to_a_deleted_session_is_not_found(
    session_service: BaseSessionService, app_name: str
) -> None:
    session = await _created(session_service, app_name)
    await session_service.delete_session(app_name=app_name, user_id=USER, session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await session_service.append_event(session, _text("user", "late", time.time()))


async def test_append_base_semantics(session_service: BaseSessionService, app_name: str) -> None:
    session = await _created(session_service, app_name, base=0)
    now = time.time()
    partial = _text("model", "par", now, partial=True)
    assert await session_service.append_event(session, partial) is partial
    assert session.events == []
    event = _text("model", "done", now + 1)
    event.actions = EventActions(
        state_delta={"s": 1, "app:a": "x", "user:u": [1, 2], "temp:t": "gone"}
    )
    returned = await session_service.append_event(session, event)
    assert returned.actions.state_delta == {"s": 1, "app:a": "x", "user:u": [1, 2]}
    assert session.state == {"base": 0, "s": 1, "app:a": "x", "user:u": [1, 2], "temp:t": "gone"}
    assert session.last_update_time == now + 1
    # An equal re-delivery of a stored event is a no-op.
    await session_service.append_event(session, returned)
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert got is not None
    assert got.events == [returned]
    assert got.state == {"base": 0, "s": 1, "app:a": "x", "user:u": [1, 2]}
    assert got.last_update_time == now + 1


async def test_user_state_written_in_one_session_is_in_the_next(
    session_service: BaseSessionService, app_name: str
) -> None:
    first = await _created(session_service, app_name)
    event = _text("model", "noted", time.time())
    event.actions = EventActions(state_delta={"user:name": "Ingrid", "app:v": 3})
    await session_service.append_event(first, event)
    second = await _created(session_service, app_name)
    assert second.state == {"user:name": "Ingrid", "app:v": 3}
    assert await session_service.get_user_state(app_name=app_name, user_id=USER) == {
        "name": "Ingrid"
    }


async def test_app_and_user_state_survive_deleting_their_session(
    session_service: BaseSessionService, app_name: str
) -> None:
    state = {"user:kept": 1, "app:k": 2, "own": 3}
    gone = await session_service.create_session(
        app_name=app_name, user_id=USER, session_id="a", state=state
    )
    event = _text("model", "noted", time.time())
    event.actions = EventActions(state_delta={"user:later": "x", "mine": 4})
    await session_service.append_event(gone, event)
    await session_service.delete_session(app_name=app_name, user_id=USER, session_id="a")

    kept = {"user:kept": 1, "app:k": 2, "user:later": "x"}
    other = await session_service.create_session(app_name=app_name, user_id=USER, session_id="b")
    assert other.state == kept
    again = await session_service.create_session(app_name=app_name, user_id=USER, session_id="a")
    assert again.state == kept  # the deleted session's own keys went with it
    assert await session_service.get_user_state(app_name=app_name, user_id=USER) == {
        "kept": 1,
        "later": "x",
    }


async def test_get_session_config(session_service: BaseSessionService, app_name: str) -> None:
    session = await _created(session_service, app_name)
    now = time.time()
    events = [_text("user", f"m{i}", now + i) for i in range(5)]
    for event in events:
        await session_service.append_event(session, event)

    async def read(config: GetSessionConfig | None) -> list[Event]:
        got = await session_service.get_session(
            app_name=app_name, user_id=USER, session_id=session.id, config=config
        )
        assert got is not None
        return got.events

    assert await read(None) == events
    assert await read(GetSessionConfig(num_recent_events=0)) == []
    assert await read(GetSessionConfig(num_recent_events=2)) == events[3:]
    assert await read(GetSessionConfig(num_recent_events=9)) == events
    assert await read(GetSessionConfig(after_timestamp=now + 2)) == events[2:]
    assert await read(GetSessionConfig(after_timestamp=now + 2.5)) == events[3:]
    assert await read(GetSessionConfig(after_timestamp=now + 9)) == []
    assert await read(GetSessionConfig(num_recent_events=2, after_timestamp=now + 1)) == events[3:]
    assert await read(GetSessionConfig(num_recent_events=4, after_timestamp=now + 3)) == events[3:]


def _every_kind(now: float) -> list[Event]:
    """One event of each kind a Runner produces (and a few fields it rarely sets)."""
    call = types.FunctionCall(id="call-1", name="lookup", args={"q": "weather", "n": 2})
    response = types.FunctionResponse(id="call-1", name="lookup", response={"result": "sunny"})
    return [
        _text("user", "What's the weather?", now, branch="root"),
        Event(
            author="root",
            invocation_id="inv-1",
            timestamp=now + 1,
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            long_running_tool_ids={"call-1"},
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=12, candidates_token_count=3, total_token_count=15
            ),
            model_version="scripted-1",
            finish_reason=types.FinishReason.STOP,
        ),
        Event(
            author="root",
            invocation_id="inv-1",
            timestamp=now + 2,
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
            actions=EventActions(
                state_delta={"w": "sunny", "app:calls": 1, "user:city": "Oslo", "temp:x": 1},
                skip_summarization=True,
            ),
        ),
        Event(
            author="root",
            invocation_id="inv-1",
            timestamp=now + 3,
            actions=EventActions(transfer_to_agent="helper"),
            custom_metadata={"trace": {"id": "t-1", "tags": ["a", "b"]}, "n": 1.5},
        ),
        _text(
            "helper", "It is sunny in Oslo.", now + 4, invocation_id="inv-1", branch="root.helper"
        ),
        Event(
            author="user",
            invocation_id="inv-2",
            timestamp=now + 5,
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=now,
                    end_timestamp=now + 4,
                    compacted_content=types.Content(
                        role="model", parts=[types.Part(text="The user asked the weather.")]
                    ),
                )
            ),
        ),
        _text("user", "Thanks! ✓ ünïcode", now + 6, invocation_id="inv-3", turn_complete=True),
    ]


async def test_every_event_kind_round_trips_equal(
    session_service: BaseSessionService, app_name: str
) -> None:
    session = await _created(session_service, app_name)
    for event in _every_kind(time.time()):
        await session_service.append_event(session, event)
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert got is not None
    assert got.events == session.events
    assert [e.model_dump() for e in got.events] == [e.model_dump() for e in session.events]
    assert got.state == {"w": "sunny", "app:calls": 1, "user:city": "Oslo"}


@pytest.mark.parametrize(
    ("user_id", "session_id"),
    [
        ("team/alice", "a/b/c"),
        ("100%", "%2F"),
        ("with space", " padded "),
        ("Zoë", "セッション"),
        ("u" * 128, "s" * 128),
        ("..", "."),
    ],
)
async def test_ids_round_trip_through_create_get_list(
    session_service: BaseSessionService, app_name: str, user_id: str, session_id: str
) -> None:
    created = await session_service.create_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    got = await session_service.get_session(
        app_name=app_name, user_id=user_id, session_id=created.id
    )
    assert got is not None
    assert (got.user_id, got.id) == (user_id, session_id.strip())
    listed = await session_service.list_sessions(app_name=app_name, user_id=user_id)
    assert [(s.user_id, s.id) for s in listed.sessions] == [(user_id, session_id.strip())]


class _ScriptedLlm(BaseLlm):
    """Replies from `script` in call order, whichever agent calls (answers need no network)."""

    script: list[types.Part] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del llm_request, stream
        yield LlmResponse(
            content=types.Content(role="model", parts=[self.script.pop(0)]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=7, candidates_token_count=2
            ),
        )


def lookup(query: str) -> dict[str, str]:
    """Look a fact up."""
    return {"result": f"facts about {query}"}


async def test_every_event_a_runner_produced_round_trips_equal(
    session_service: BaseSessionService, app_name: str
) -> None:
    model = _ScriptedLlm(
        model="scripted",
        script=[
            types.Part(function_call=types.FunctionCall(name="lookup", args={"query": "tea"})),
            types.Part(
                function_call=types.FunctionCall(
                    name="transfer_to_agent", args={"agent_name": "helper"}
                )
            ),
            types.Part(text="Tea is a drink."),
        ],
    )
    helper = LlmAgent(name="helper", model=model, output_key="user:last_answer")
    root = LlmAgent(name="root", model=model, tools=[lookup], sub_agents=[helper])
    runner = Runner(agent=root, app_name=app_name, session_service=session_service)
    session = await _created(session_service, app_name)
    message = types.Content(role="user", parts=[types.Part(text="Tell me about tea")])
    produced = [
        event
        async for event in runner.run_async(
            user_id=USER, session_id=session.id, new_message=message
        )
    ]
    got = await session_service.get_session(app_name=app_name, user_id=USER, session_id=session.id)
    assert got is not None
    assert len(got.events) == len(produced) + 1  # the user's message is not yielded
    assert got.events[1:] == produced
    assert got.events[0].content == message
    assert [e.author for e in got.events] == ["user", "root", "root", "root", "root", "helper"]
    assert got.state == {"user:last_answer": "Tea is a drink."}
