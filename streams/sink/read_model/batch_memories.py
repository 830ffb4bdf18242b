"""Which memories a batch adds and removes, written in the batch's transaction.

A row the fold keeps (:data:`REMEMBERED`: not annulled, not bookkeeping) has a memory
(:func:`~projections.memory.memory_record.memory_of`) when the latest memory record after it
that names it is an ``add``, or, when none does, its app's mode is ``all`` (:class:`MemoryApps`,
the sink's ``memory_apps`` setting; every other app is ``explicit``):
:mod:`projections.memory.memory_marks`. A ``write`` memory record's memory is kept until a
later ``delete`` names it. A row that leaves those statuses loses its memory, one
a rewind brings back is judged again. So the memories of a session are a function of its rows'
final statuses and its memory records, however the log was cut into batches. Design:
``streams/sink/README.md``, "Memories".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from psycopg import sql

from projections.history.event_status import EventStatus
from projections.memory.memory_marks import PlacedMark, names, remembered
from projections.memory.memory_record import Memory, memory_of
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.memory_mark import memory_mark
from streams.sink.database import Connection
from streams.sink.memory_rows import add_memories
from streams.sink.read_model.memory_marks import (
    StoredMark,
    kept_offsets_before,
    session_marks,
    store_marks,
)
from streams.sink.read_model.stored_history import records_at

#: The statuses whose rows have a memory: what the fold keeps of a session (masked and
#: superseded included: a summary stands in for them, and the search drops the events
#: a summary hit covers).
REMEMBERED: Final = frozenset({EventStatus.LIVE, EventStatus.MASKED, EventStatus.SUPERSEDED})

#: The rows a memory record may name: the kept ones, and ``write`` records (status memory).
_NAMEABLE: Final = REMEMBERED | {EventStatus.MEMORY}


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
    """A batch's memories: new rows' memories, rows to re-read, rows to forget, memory records."""

    apps: MemoryApps
    added: list[Memory] = field(default_factory=list)
    readded: dict[int, set[int]] = field(default_factory=dict)
    removed: list[tuple[int, int]] = field(default_factory=list)
    marks: list[StoredMark] = field(default_factory=list)

    def note_new(self, logged: LoggedEvent, partition: int, status: EventStatus) -> None:
        """A new row of the batch, with its status at the batch's end."""
        session_key = logged.envelope.session_key
        mark = memory_mark(logged.envelope.event)
        if mark is not None and mark.entry is not None:  # a write: the memory it carries
            written = memory_of(logged, partition)
            if written is not None:
                self.added.append(written)
        elif mark is not None:
            self.marks.append(StoredMark(session_key, partition, PlacedMark(logged.offset, mark)))
        elif status in REMEMBERED and self.apps.feeds(parse_session_key(session_key).app):
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
        """An earlier row whose status the batch changed from `old` to `new`.

        In every mode: a memory record may have given the row a memory.
        """
        if old in REMEMBERED and new not in REMEMBERED:
            self.removed.append((partition, offset))
        elif old not in REMEMBERED and new in REMEMBERED:
            self.readded.setdefault(partition, set()).add(offset)

    async def write(self, conn: Connection, schema: str) -> None:
        """Store the memory records; remove, then add, in the caller's transaction.

        The rows a memory record of the batch names lose their memory and are candidates
        again, as are the new rows' and the re-read ones': each candidate is written when
        :func:`~projections.memory.memory_marks.remembered` says so.
        """
        await store_marks(conn, schema, self.marks)
        named = await self._named_by_marks(conn, schema)
        removed = [*self.removed, *((m.partition, m.offset) for m in named)]
        if removed:
            await conn.execute(
                sql.SQL(
                    "DELETE FROM {} AS m USING unnest(%s::integer[], %s::bigint[]) AS r(p, o)"
                    ' WHERE m.partition = r.p AND m."offset" = r.o'
                ).format(sql.Identifier(schema, "memories")),
                ([p for p, _ in removed], [o for _, o in removed]),
            )
        candidates = {(m.partition, m.offset): m for m in [*self.added, *named]}
        for partition, offsets in sorted(self.readded.items()):
            for record in await records_at(conn, schema, partition, sorted(offsets)):
                memory = memory_of(record, partition)
                if memory is not None:
                    candidates[(partition, memory.offset)] = memory
        memories = [candidates[place] for place in sorted(candidates)]  # first row first
        if self.marks or self.readded:
            marks = await session_marks(conn, schema, (m.session_key for m in memories))
            memories = [
                m
                for m in memories
                if remembered(
                    m.offset,
                    m.memory_id,
                    marks.get(m.session_key, ()),
                    every=m.written or self.apps.feeds(m.app),
                )
            ]
        if memories:
            await add_memories(conn, schema, memories)

    async def _named_by_marks(self, conn: Connection, schema: str) -> list[Memory]:
        """The memories of the kept rows the batch's memory records name (rows before them)."""
        named: list[Memory] = []
        for stored in self.marks:
            offsets = await kept_offsets_before(
                conn, schema, stored.session_key, stored.placed.offset, _NAMEABLE
            )
            for record in await records_at(conn, schema, stored.partition, offsets):
                memory = memory_of(record, stored.partition)
                if memory is not None and names(stored.placed.mark, memory.memory_id):
                    named.append(memory)
        return named
