"""A deleted incarnation's rows keep their status before it; its app: and user: state stays.

ADK's ``delete_session`` keeps the app and user stores. The oracle is the fold's own
classification of the records before each deletion (``classify_session`` of the prefix), and
``expected_state`` (read_model_oracle.py), which takes each incarnation's app and user state
as the fold held it just before its deletion; never the sink's in-batch bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable

from psycopg import sql

from projections.history.classification import classify_session
from projections.history.event_status import APPLIED, EventStatus
from schemas.codec import encode
from schemas.creation_mark import creation_event
from schemas.deletion_mark import deletion_event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.rows import COLUMNS, batch_rows
from tests.integration.streams.sink.read_model_oracle import (
    LoggedSession,
    expected_state,
    fetch,
    stored_state,
)
from tests.integration.streams.sink.test_conditional_rows import conditional_log, load
from tests.support.conditional_records import conditional_envelope
from tests.support.events import text_event

TOPIC = "conditional.events"
#: What the backfill may call a row applied before its deletion.
COUNTED = {str(status) for status in APPLIED} | {"creation", "applied"}


def expected_before_deletion(records: list[LoggedEvent]) -> dict[int, str | None]:
    """Each row's status before the deletion that made it ``deleted``; None for the others."""
    final = classify_session(records)
    before: dict[int, str | None] = {}
    for n, record in enumerate(records):
        if final[record.offset] is not EventStatus.DELETION:
            continue
        for offset, status in classify_session(records[:n]).items():
            if offset not in before and status is not EventStatus.DELETION:
                before[offset] = None if status is EventStatus.DELETED else str(status)
    return {
        int(r.offset): before.get(r.offset) if final[r.offset] is EventStatus.DELETED else None
        for r in records
    }


async def stored_before(conn: Connection, schema: str) -> dict[int, str | None]:
    rows = await fetch(conn, schema, 'SELECT "offset", status_before_deletion FROM {}.event_rows')
    return {int(str(o)): None if s is None else str(s) for o, s in rows}


async def test_the_sink_keeps_each_status_before_deletion_however_the_log_is_cut(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    sessions = conditional_log(seed=26)
    records = sorted((r for rs in sessions.values() for r in rs), key=lambda r: r.offset)
    expected: dict[int, str | None] = {}
    for rs in sessions.values():
        expected.update(expected_before_deletion(rs))
    kept = [status for status in expected.values() if status is not None]
    assert {"live", "creation", "stale"} <= set(kept)
    logged = {key: LoggedSession(key, 0, rs) for key, rs in sessions.items()}
    state = expected_state(logged)
    assert any(place[0] != "session" for place in state)
    views = []
    for cut in (1, 6, len(records)):
        schema = make_schema()
        await migrate(conn, schema)
        await load(conn, schema, records, cut)
        assert await stored_before(conn, schema) == expected, cut
        assert await stored_state(conn, schema) == state, cut
        views.append(set(await fetch(conn, schema, "SELECT * FROM {}.state")))
    assert views[0] == views[1] == views[2]  # a replay into a fresh schema: the same state


def adk_shaped() -> list[LoggedEvent]:
    """A session as an ADK service writes it (each event expects the previous), then deleted."""
    key = SessionKey("acme/adk/u1/a")
    rows: list[tuple[object, int | None]] = [
        (creation_event(event_id="c0", timestamp=1.0, state={"user:kept": 1, "own": 1}), -1),
        (_writing("e1", 2.0, {"user:n": 1}), 0),
        (_writing("e2", 3.0, {"app:m": 2}), 1),
        (_writing("e3", 4.0, {"user:n": 99}), 0),  # stale
        (_writing("e4", 5.0, {"user:u": 5}), None),
        (_writing("e5", 6.0, {"user:c": 6, "own": 2}), 4),
        (deletion_event(event_id="d6", timestamp=7.0), None),
        (creation_event(event_id="c7", timestamp=8.0, state={"x": 1}), -1),
    ]
    return [
        LoggedEvent(Offset(n), conditional_envelope(key, event, expected))  # type: ignore[arg-type]
        for n, (event, expected) in enumerate(rows)
    ]


def _writing(event_id: str, timestamp: float, delta: dict[str, object]) -> object:
    event = text_event(event_id, "inv", timestamp, author="model")
    return event.model_copy(
        update={"actions": event.actions.model_copy(update={"state_delta": delta})}
    )


async def test_the_migration_backfills_what_the_rows_decide_and_never_more(
    conn: Connection, schema: str
) -> None:
    adk = adk_shaped()
    assert expected_before_deletion(adk)[3] == "stale"
    mixed = conditional_log(seed=27)
    sessions = {"acme/adk/u1/a": adk}
    last = len(adk)
    for key, rs in mixed.items():
        sessions[key] = [LoggedEvent(Offset(last + int(r.offset)), r.envelope) for r in rs]
    records = sorted((r for rs in sessions.values() for r in rs), key=lambda r: r.offset)
    statuses = {int(o): s for rs in sessions.values() for o, s in classify_session(rs).items()}
    await migrate(conn, schema, up_to=10)
    source = [
        SourceRecord(TOPIC, 0, r.offset, r.envelope.session_key.encode(), encode(r.envelope))
        for r in records
    ]
    rows = [row.with_status(str(statuses[row.offset])) for row in batch_rows(source, 1).rows]
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(schema, "event_rows"),
        sql.SQL(", ").join(map(sql.Identifier, COLUMNS[:-1])),
    )
    async with conn.cursor() as cursor, cursor.copy(copy) as rows_in:
        for row in rows:
            await rows_in.write_row(row.values()[:-1])

    assert [m.version for m in await migrate(conn, schema, up_to=11)] == [11]

    backfilled = await stored_before(conn, schema)
    assert [backfilled[n] for n in range(last)] == [
        "creation", "applied", "applied", None, "applied", "applied", None, None
    ]  # fmt: skip
    expected: dict[int, str | None] = {}
    for rs in sessions.values():
        expected.update(expected_before_deletion(rs))
    claimed = {o: s for o, s in backfilled.items() if s is not None and o >= last}
    assert claimed  # the chains of the generated sessions are found too
    for offset, status in claimed.items():
        assert expected[offset] in COUNTED, offset  # never a record the fold passed over
        assert (status == "creation") == (expected[offset] == "creation"), offset
    adk_state = await stored_state(conn, schema)
    adk_state = {place: v for place, v in adk_state.items() if place[2] == "adk"}
    assert adk_state == expected_state({"acme/adk/u1/a": LoggedSession("acme/adk/u1/a", 0, adk)})
    assert adk_state[("user", "acme", "adk", "u1", None, "n")] == 1
