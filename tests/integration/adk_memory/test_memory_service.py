"""``ctxstream.adk.MemoryService`` against ADK's ``InMemoryMemoryService`` (the oracle).

Real broker, real PostgreSQL, real google-adk. Each test does the same calls on both
services and compares what a search finds (id, author, timestamp, role, text); the
queries name words every expected memory holds, so both rankings find all of them. A
replay of the log into a fresh schema rebuilds the same memories.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import LiteralString

from google.adk.events.event import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types
from psycopg import sql

from ctxstream import Client
from ctxstream.adk import MemoryService
from ctxstream.adk.ids import session_key
from streams.sink.database import connect
from streams.sink.migrate import migrate
from tests.integration.adk_memory.conftest import TENANT, MemoryDeployment, found
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import running_sink, sink_settings, wait_caught_up


def _event(author: str, text: str | None, stamp: float, invocation: str = "i1") -> Event:
    content = None
    if text is not None:
        role = "user" if author == "user" else "model"
        content = types.Content(role=role, parts=[types.Part(text=text)])
    return Event(
        id=uuid.uuid4().hex,
        author=author,
        invocation_id=invocation,
        timestamp=stamp,
        content=content,
    )


def _call(stamp: float) -> Event:
    part = types.Part(function_call=types.FunctionCall(name="lookup", args={"q": "x"}))
    return Event(
        id=uuid.uuid4().hex,
        author="helper",
        invocation_id="i1",
        timestamp=stamp,
        content=types.Content(role="model", parts=[part]),
    )


def _ids() -> tuple[str, str]:
    """A fresh user id (with a slash and a space: escaped in the key) and session id."""
    return f"user/{uuid.uuid4().hex[:8]} x", f"s-{uuid.uuid4().hex[:8]}"


async def _on_log(
    client: Client, app: str, user: str, session: str, events: Sequence[Event]
) -> None:
    """Append `events` as ctxstream's session service would (ADK's JSON dump)."""
    key = session_key(TENANT, app, user, session)
    dumped = [e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in events]
    await client.append_many(key, dumped)


async def _adk_session(app: str, user: str, session_id: str, events: Sequence[Event]) -> Session:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name=app, user_id=user, session_id=session_id)
    for event in events:
        await sessions.append_event(session, event)
    return session


async def _scalar(
    deployment: MemoryDeployment, table: str, column: LiteralString, key: str
) -> object:
    """`column` of `table`'s rows of session `key` (one row) in the deployment's schema."""
    conn = await connect(deployment.dsn)
    try:
        statement = sql.SQL("SELECT {} FROM {} WHERE session_key = %s").format(
            sql.SQL(column), sql.Identifier(deployment.schema, table)
        )
        row = await (await conn.execute(statement, (key,))).fetchone()
    finally:
        await conn.close()
    assert row is not None
    return row[0]


def _story(start: float) -> list[Event]:
    return [
        _event("user", "My sister Ingrid loves sushi", start),
        _event("helper", "Noted: Ingrid loves sushi", start + 1),
        _call(start + 2),
        _event("user", "I parked the car on level 3", start + 3, "i2"),
    ]


async def test_add_session_from_a_partial_session_remembers_the_log_up_to_its_last_offset(
    memory_service: MemoryService, log_client: Client, memory_deployment: MemoryDeployment
) -> None:
    app, (user, session_id) = "support", _ids()
    events = _story(1_700_000_000.0)
    await _on_log(log_client, app, user, session_id, events)
    partial = Session(id=session_id, app_name=app, user_id=user, events=events[-1:])
    await memory_service.add_session_to_memory(partial)
    # The memory record leaves the session's last activity (list_sessions' order) alone.
    key = session_key(TENANT, app, user, session_id)
    assert (
        await _scalar(memory_deployment, "session_index", "last_activity", key) == 1_700_000_003.0
    )

    oracle = InMemoryMemoryService()
    await oracle.add_session_to_memory(await _adk_session(app, user, session_id, events))
    query = "Ingrid sushi car level"
    expected = await found(oracle, app, user, query)
    assert len(expected) == 3
    assert await found(memory_service, app, user, query) == expected


async def test_a_session_of_another_session_service_is_remembered_once(
    memory_service: MemoryService, memory_deployment: MemoryDeployment
) -> None:
    app, (user, session_id) = "support", _ids()
    session = await _adk_session(app, user, session_id, _story(1_700_000_100.0))
    oracle = InMemoryMemoryService()
    for _ in range(2):
        await memory_service.add_session_to_memory(session)
        await oracle.add_session_to_memory(session)
    query = "Ingrid sushi car level"
    expected = await found(oracle, app, user, query)
    assert len(expected) == 3
    assert await found(memory_service, app, user, query) == expected
    key = session_key(TENANT, app, user, session_id)
    assert await _scalar(memory_deployment, "memories", "count(*)", key) == 3
    # A written memory is deleted like any other, and stays deleted.
    for service in (memory_service, oracle):
        await service.delete_memory(app_name=app, user_id=user, memory_id=session.events[0].id)
        await service.add_session_to_memory(session)
    expected = await found(oracle, app, user, query)
    assert len(expected) == 2
    assert await found(memory_service, app, user, query) == expected


async def test_add_events_remembers_those_events_only(
    memory_service: MemoryService, log_client: Client
) -> None:
    app, (user, session_id) = "support", _ids()
    events = _story(1_700_000_200.0)
    await _on_log(log_client, app, user, session_id, events)
    oracle = InMemoryMemoryService()
    loose = _event("user", "Felix is my cat", 1.0)
    for service in (memory_service, oracle):
        await service.add_events_to_memory(
            app_name=app, user_id=user, events=events[1:2], session_id=session_id
        )
        # Without a session: the user's own memory.
        await service.add_events_to_memory(app_name=app, user_id=user, events=[loose])
    query = "Ingrid sushi car level Felix"
    expected = await found(oracle, app, user, query)
    assert {text for *_, text in expected} == {"Noted: Ingrid loves sushi", "Felix is my cat"}
    assert await found(memory_service, app, user, query) == expected


async def test_add_memory_writes_entries_and_an_id_replaces_its_entry(
    memory_service: MemoryService,
) -> None:
    app, (user, _) = "support", _ids()

    def entry(memory_id: str | None, text: str) -> MemoryEntry:
        content = types.Content(role="user", parts=[types.Part(text=text)])
        return MemoryEntry(
            id=memory_id, author="user", timestamp="2024-05-01T10:30:00.250000", content=content
        )

    await memory_service.add_memory(
        app_name=app,
        user_id=user,
        memories=[entry("m1", "Rafael lives in Lisbon"), entry(None, "Rafael plays chess")],
    )
    first = await found(memory_service, app, user, "Rafael Lisbon chess")
    assert {(i == "m1", t) for i, *_, t in first} == {
        (True, "Rafael lives in Lisbon"),
        (False, "Rafael plays chess"),
    }
    assert {stamp for _, _, stamp, _, _ in first} == {"2024-05-01T10:30:00.250000"}
    await memory_service.add_memory(
        app_name=app, user_id=user, memories=[entry("m1", "Rafael lives in Porto")]
    )
    again = await found(memory_service, app, user, "Rafael Lisbon Porto chess")
    assert sorted(t for *_, t in again) == ["Rafael lives in Porto", "Rafael plays chess"]


async def test_a_deleted_memory_stays_deleted_when_its_session_is_added_again(
    memory_service: MemoryService, log_client: Client
) -> None:
    app, (user, session_id) = "support", _ids()
    events = _story(1_700_000_300.0)
    await _on_log(log_client, app, user, session_id, events)
    session = Session(id=session_id, app_name=app, user_id=user, events=events)
    oracle = InMemoryMemoryService()
    query = "Ingrid sushi car level"
    for service in (memory_service, oracle):
        await service.add_session_to_memory(session)
        await service.delete_memory(app_name=app, user_id=user, memory_id=events[0].id)
        await service.add_session_to_memory(session)
    expected = await found(oracle, app, user, query)
    assert events[0].id not in {i for i, *_ in expected}
    assert len(expected) == 2
    assert await found(memory_service, app, user, query) == expected


async def test_a_search_sees_only_its_app_and_user(
    memory_service: MemoryService, log_client: Client
) -> None:
    (user, first), (other, second) = _ids(), _ids()
    fact = _event("user", "My locker code is 4411", 1_700_000_400.0)
    await _on_log(log_client, "support", user, first, [fact])
    leaks = {
        ("support", other, second): _event("user", "My locker code is 9900", 1_700_000_401.0),
        ("billing", user, second): _event("user", "My locker code is 7700", 1_700_000_402.0),
    }
    for (app, owner, session_id), event in leaks.items():
        await _on_log(log_client, app, owner, session_id, [event])
        await memory_service.add_session_to_memory(
            Session(id=session_id, app_name=app, user_id=owner, events=[event])
        )
    await memory_service.add_session_to_memory(
        Session(id=first, app_name="support", user_id=user, events=[fact])
    )
    answer = await found(memory_service, "support", user, "What is my locker code?")
    assert {i for i, *_ in answer} == {fact.id}
    assert await found(memory_service, "support", f"{user}-nobody", "locker code") == set()


async def test_a_replay_of_the_log_rebuilds_the_same_memories(
    memory_service: MemoryService, log_client: Client, memory_deployment: MemoryDeployment
) -> None:
    app, (user, session_id) = "support", _ids()
    events = _story(1_700_000_500.0)
    await _on_log(log_client, app, user, session_id, events[:2])
    await memory_service.add_session_to_memory(
        await _adk_session(app, user, session_id, events)  # two on the log, two written
    )
    await memory_service.delete_memory(app_name=app, user_id=user, memory_id=events[1].id)
    entry = MemoryEntry(content=types.Content(role="user", parts=[types.Part(text="Pepper barks")]))
    await memory_service.add_memory(app_name=app, user_id=user, memories=[entry])

    columns = (
        "SELECT session_key, memory_id, author, role, event_timestamp, kind, text FROM {}"
        " ORDER BY 1, 2"
    )
    deployment = memory_deployment
    replayed = fresh_schema_name()
    conn = await connect(deployment.dsn)
    try:
        await migrate(conn, replayed)
        topic = f"{deployment.prefix}.events"
        await wait_caught_up(conn, deployment.schema, deployment.bootstrap, topic)
        settings = sink_settings(
            deployment.bootstrap, deployment.prefix, deployment.dsn, replayed, 2
        )
        async with running_sink(settings.model_copy(update={"memory_apps": ""})):
            await wait_caught_up(conn, replayed, deployment.bootstrap, topic)
        tables = [
            await (
                await conn.execute(sql.SQL(columns).format(sql.Identifier(schema, "memories")))
            ).fetchall()
            for schema in (deployment.schema, replayed)
        ]
    finally:
        await conn.close()
        drop_schema(deployment.dsn, replayed)
    assert tables[0] == tables[1]
    prefix = session_key(TENANT, app, user, session_id).rsplit("/", 1)[0] + "/"
    texts = {row[6] for row in tables[0] if str(row[0]).startswith(prefix)}
    assert {"My sister Ingrid loves sushi", "I parked the car on level 3", "Pepper barks"} <= texts
    assert "Noted: Ingrid loves sushi" not in texts
