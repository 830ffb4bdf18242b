"""Which memories a batch adds and removes, written in the batch's transaction.

The apps whose memory mode is ``all`` (:class:`MemoryApps`, the sink's ``memory_apps``
setting) get a memory (:func:`~projections.memory.memory_record.memory_of`) for each row that
the fold keeps (:data:`REMEMBERED`: not annulled, not bookkeeping); a row that later leaves
those statuses (a rewind annuls it) loses its memory, and one a later rewind brings back gets
it again. So the memories of a session are a function of its rows' final statuses, however
the log was cut into batches. Design: ``streams/sink/README.md``, "Memories".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from psycopg import sql

from projections.history.event_status import EventStatus
from projections.memory.memory_record import Memory, memory_of
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from streams.sink.memory_rows import add_memories
from streams.sink.read_model.stored_history import records_at

#: The statuses whose rows have a memory: what the fold keeps of a session (masked and
#: superseded included: a summary stands in for them, and the search drops the events
#: a summary hit covers).
REMEMBERED: Final = frozenset({EventStatus.LIVE, EventStatus.MASKED, EventStatus.SUPERSEDED})


@dataclass(frozen=True, slots=True)
class MemoryApps:
    """The apps whose sessions feed memory: every app (``*``), none, or the named ones."""

    every_app: bool = False
    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, setting: str) -> MemoryApps:
        """``*`` -> every app; ``a,b`` -> apps a and b; empty -> none.

        Raises:
            ValueError: ``*`` given together with names.
        """
        names = frozenset(name.strip() for name in setting.split(",") if name.strip())
        if "*" in names and len(names) > 1:
            raise ValueError(f"memory apps {setting!r}: '*' means every app, name none with it")
        return cls(every_app="*" in names, names=names - {"*"})

    def feeds(self, app: str) -> bool:
        """Whether `app`'s sessions feed memory."""
        return self.every_app or app in self.names


@dataclass(slots=True)
class MemoryPlan:
    """A batch's memories: new rows' memories, rows to re-read and remember, rows to forget."""

    apps: MemoryApps
    added: list[Memory] = field(default_factory=list)
    readded: dict[int, list[int]] = field(default_factory=dict)
    removed: list[tuple[int, int]] = field(default_factory=list)

    def note_new(self, logged: LoggedEvent, partition: int, status: EventStatus) -> None:
        """A new row of the batch, with its status at the batch's end."""
        if status in REMEMBERED and self.apps.feeds(
            parse_session_key(logged.envelope.session_key).app
        ):
            memory = memory_of(logged, partition)
            if memory is not None:
                self.added.append(memory)

    def note_change(
        self,
        session_key: str,
        partition: int,
        offset: int,
        old: EventStatus | None,
        new: EventStatus,
    ) -> None:
        """An earlier row whose status the batch changed from `old` to `new`."""
        if not self.apps.feeds(parse_session_key(session_key).app):
            return
        if old in REMEMBERED and new not in REMEMBERED:
            self.removed.append((partition, offset))
        elif old not in REMEMBERED and new in REMEMBERED:
            self.readded.setdefault(partition, []).append(offset)

    async def write(self, conn: Connection, schema: str) -> None:
        """Remove, then add, in the caller's transaction."""
        if self.removed:
            await conn.execute(
                sql.SQL(
                    "DELETE FROM {} AS m USING unnest(%s::integer[], %s::bigint[]) AS r(p, o)"
                    ' WHERE m.partition = r.p AND m."offset" = r.o'
                ).format(sql.Identifier(schema, "memories")),
                ([p for p, _ in self.removed], [o for _, o in self.removed]),
            )
        memories = list(self.added)
        for partition, offsets in sorted(self.readded.items()):
            for record in await records_at(conn, schema, partition, offsets):
                memory = memory_of(record, partition)
                if memory is not None:
                    memories.append(memory)
        if memories:
            await add_memories(conn, schema, memories)
