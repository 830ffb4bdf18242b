"""The ``session_index`` rows a batch changes: each session's last activity, creation, deletion.

:func:`session_marks` reads them off the batch's rows, each with its final status (pure);
:func:`index_sessions` upserts them in the batch's transaction, after the rows. A session's
mark is its highest row's offset and timestamp, whether its highest row besides memory and
stale records is its deletion (then the session is deleted, as the ``sessions`` view says:
every row ``deleted``, ``deletion``, ``memory`` or ``stale``, one a deletion or stale; a batch
of memory and stale records only leaves that as it was), the timestamp of the first row of its
incarnation the batch starts or continues (memory and stale records neither start nor end an
incarnation; a creation record starts one), and the fold's writer offset after the batch.
Design: ``streams/sink/README.md``, "Sessions".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from projections.history.event_status import EventStatus
from streams.sink.database import Connection
from streams.sink.rows import EventRow

#: Rows that belong to no incarnation: an ended one's, its deletion, memory and stale records.
_NOT_ALIVE: Final = frozenset(
    {
        str(EventStatus.DELETED),
        str(EventStatus.DELETION),
        str(EventStatus.MEMORY),
        str(EventStatus.STALE),
    }
)
#: Rows that neither start nor end an incarnation: the session's deletion state stands.
_UNMARKING: Final = frozenset({str(EventStatus.MEMORY), str(EventStatus.STALE)})
#: The columns of ``session_index``, in :meth:`SessionMark.values` order.
INDEX_COLUMNS: Final = (
    "session_key",
    "tenant",
    "app",
    "user_id",
    "session_id",
    "partition",
    "created",
    "last_activity",
    "last_offset",
    "writer_offset",
    "deleted",
)
_TYPES: Final = (
    "text",
    "text",
    "text",
    "text",
    "text",
    "integer",
    "float8",
    "float8",
    "int8",
    "int8",
)


@dataclass(frozen=True, slots=True)
class SessionMark:
    """What a batch says of one session, for its ``session_index`` row.

    Attributes:
        restarted: The batch holds a deletion record of the session: ``created`` replaces
            the stored one (None: nothing of the session is left after it).
        created: The timestamp of the first row of the session's incarnation in the batch
            that is neither ``deleted``, ``deletion``, ``memory`` nor ``stale``, None when
            there is none.
        deleted: Whether the session ends the batch deleted; None when the batch holds only
            memory and stale records of it (the stored answer stands; a new session's is
            True when one of them is stale: it was never created, else False).
        writer_offset: The fold's writer offset after the batch (``-1``: none).
        stale_only: The batch holds stale records and no other of the session but memory ones.
    """

    row: EventRow
    created: float | None
    restarted: bool
    deleted: bool | None
    writer_offset: int = -1
    stale_only: bool = False

    def values(self) -> tuple[object, ...]:
        """The row's values in :data:`INDEX_COLUMNS` order."""
        row = self.row
        return (
            row.session_key,
            row.tenant,
            row.app,
            row.user_id,
            row.session_id,
            row.partition,
            self.created,
            row.event_timestamp,
            row.offset,
            self.writer_offset,
            self.stale_only if self.deleted is None else self.deleted,
        )


def session_marks(
    rows: Iterable[EventRow], writers: Mapping[str, int] | None = None
) -> list[SessionMark]:
    """Each session's mark after the batch of `rows` (statuses set), in session key order.

    `writers`: each session's writer offset after the batch (missing: ``-1``).
    """
    writers = writers or {}
    sessions: dict[str, list[EventRow]] = {}
    for row in rows:
        sessions.setdefault(row.session_key, []).append(row)
    marks = []
    for key in sorted(sessions):
        ordered = sorted(sessions[key], key=lambda row: row.offset)
        deletions = [n for n, row in enumerate(ordered) if row.status == EventStatus.DELETION]
        since = deletions[-1] + 1 if deletions else 0
        alive = [row for row in ordered[since:] if row.status not in _NOT_ALIVE]
        marking = [row for row in ordered if row.status not in _UNMARKING]
        marks.append(
            SessionMark(
                row=ordered[-1],
                created=alive[0].event_timestamp if alive else None,
                restarted=bool(deletions),
                deleted=marking[-1].status == EventStatus.DELETION if marking else None,
                writer_offset=writers.get(key, -1),
                stale_only=not marking and any(row.status == EventStatus.STALE for row in ordered),
            )
        )
    return marks


async def index_sessions(
    conn: Connection, schema: str, rows: Sequence[EventRow], writers: Mapping[str, int]
) -> None:
    """Upsert the ``session_index`` rows of the sessions `rows` touch (in the transaction).

    `writers`: each session's writer offset after the batch, as the fold keeps it.
    """
    marks = session_marks(rows, writers)
    for restarted, kept in ((False, False), (True, False), (False, True)):
        chosen = [
            mark.values()
            for mark in marks
            if mark.restarted is restarted and (mark.deleted is None) is kept
        ]
        if chosen:
            await _upsert(conn, schema, chosen, restarted=restarted, keep_deleted=kept)


async def _upsert(
    conn: Connection,
    schema: str,
    values: list[tuple[object, ...]],
    *,
    restarted: bool,
    keep_deleted: bool,
) -> None:
    # A batch without a deletion keeps the incarnation's stored creation; one with a deletion
    # starts a new incarnation. The offset check keeps a row from going back (it cannot: one
    # partition's batches are fenced in order), so a replayed batch changes nothing.
    # A batch of memory and stale records only keeps the stored deletion (a new row's is
    # False, or True when one is stale: a session never created).
    created = "EXCLUDED.created" if restarted else "coalesce(s.created, EXCLUDED.created)"
    deleted = "s.deleted" if keep_deleted else "EXCLUDED.deleted"
    unnest = sql.SQL(", ").join(
        sql.SQL("%s::{}[]").format(sql.SQL(kind)) for kind in (*_TYPES, "boolean")
    )
    columns = sql.SQL(", ").join(map(sql.Identifier, INDEX_COLUMNS))
    statement = sql.SQL(
        "INSERT INTO {table} AS s ({columns}) SELECT * FROM unnest({unnest})"
        " ON CONFLICT (session_key) DO UPDATE SET created = {created},"
        " last_activity = EXCLUDED.last_activity, last_offset = EXCLUDED.last_offset,"
        " writer_offset = EXCLUDED.writer_offset,"
        " deleted = {deleted}, partition = EXCLUDED.partition"
        " WHERE s.last_offset < EXCLUDED.last_offset"
    ).format(
        table=sql.Identifier(schema, "session_index"),
        columns=columns,
        unnest=unnest,
        created=sql.SQL(created),
        deleted=sql.SQL(deleted),
    )
    await conn.execute(statement, [list(column) for column in zip(*values, strict=True)])
