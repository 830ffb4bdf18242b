"""``ctxstream bench adk``: its baselines hold the workload's session as ADK itself would.

The oracle is ADK's own ``InMemorySessionService`` fed the same events one ``append_event``
at a time, as a Runner feeds it: the bulk-loaded ``SqliteSessionService`` and
``DatabaseSessionService`` (``sqlite+aiosqlite``) must read back, through their own
``get_session`` and ``get_user_state``, what it holds. The command's baseline run is checked
against ADK's contents function called directly on the events.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.adk.events.event import Event
from google.adk.flows.llm_flows.contents import _get_contents
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

from ctxstream.bench.adk.baselines import load_dss, load_sqlite
from ctxstream.bench.adk.workload import AGENT_NAME, AdkSession, adk_session, new_message
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration

EVENTS = 50


async def _held_by_adk(session: AdkSession) -> tuple[Session, dict[str, object]]:
    """The session and its user state as ADK's in-memory service holds them after appends."""
    service = InMemorySessionService()
    held = await service.create_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
    )
    for event in session.events:
        await service.append_event(held, event.model_copy(deep=True))
    stored = await _read(service, session)
    return stored, await service.get_user_state(app_name=session.app_name, user_id=session.user_id)


async def _read(service: BaseSessionService, session: AdkSession) -> Session:
    read = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
    )
    assert read is not None
    return read


@pytest.mark.parametrize("load", [load_sqlite, load_dss], ids=["sqlite", "dss_sqlite"])
@pytest.mark.parametrize("events", [0, 1, EVENTS])
async def test_a_bulk_loaded_service_reads_back_what_appends_would_have_stored(
    tmp_path: Path, load: object, events: int
) -> None:
    session = adk_session(events)
    expected, user_state = await _held_by_adk(session)
    service = await load(tmp_path, session)  # type: ignore[operator]
    try:
        loaded = await _read(service, session)
        assert loaded.events == expected.events
        assert loaded.state == expected.state
        assert [e.id for e in loaded.events] == [e.id for e in session.events]
        user = await service.get_user_state(app_name=session.app_name, user_id=session.user_id)
        assert user == user_state
        if events:
            assert loaded.last_update_time == expected.last_update_time
            assert len(expected.state) > 0
    finally:
        await service.close()


async def test_the_baseline_run_reports_both_services_on_adks_own_contents(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(
        kafka_bootstrap,
        tmp_path,
        "adk",
        *("--events", str(EVENTS), "--turns", "2", "--baselines-only"),
    )
    events = adk_session(EVENTS).events
    turn = Event(invocation_id="e-turn", author="user", content=new_message(0))
    contents = _get_contents(None, [*events, turn], AGENT_NAME)
    [row] = figures["results"]
    assert row["events"] == row["adk_events_returned"] == EVENTS
    assert row["contents"] == len(contents)
    assert row["adk_sqlite_ms"] > 0
    assert row["adk_dss_sqlite_ms"] > 0
    assert row["adk_sqlite_ms"] <= row["adk_sqlite_p95_ms"]
    assert row["view"] is None
    assert row["ctxstream_ms"] is None
    assert row["speedup"] is None
    assert {"append_p95_ms", "append_p50_ms", "events_returned"} <= set(row)
    assert f"{row['adk_sqlite_ms']:.1f}" in stdout.splitlines()[1]
