"""Each session's live view in ``session_index``: kept by the sink in the batch's transaction.

Per session a batch touches, :func:`~projections.live_view.kept_view.batch_view` advances the
view cached after the session's last committed batch by the batch's held records (their
statuses final); without a usable cached view, or when the batch may touch what the view
dropped, the view is selected from every held row of the session, read back in the
transaction. ``live_from`` and ``live_extra`` are written after the session's
``session_index`` row; the views are cached once the transaction commits (never ahead of the
database, like :class:`~streams.sink.read_model.history_cache.HistoryCache`). Design:
``streams/sink/README.md``, "The live view".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from projections.live_view.kept_view import HELD, KeptView, batch_view, view_of
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from streams.sink.database import Connection
from streams.sink.read_model.stored_history import stored_records
from streams.sink.rows import EventRow

#: A session key -> the ``overlap_size`` its app's sliding window re-includes.
OverlapSizes = Callable[[str], int]
#: Sessions whose views are kept by default.
DEFAULT_CAPACITY: Final = 10_000


def configured_overlaps(settings: ProjectorSettings | None = None) -> OverlapSizes:
    """The overlap of each session's app, from the projector's compaction settings.

    ``CTXSTREAM_COMPACTION_OVERRIDES``' entry for the app (else the default config); an
    entry without ``overlap_size`` (an ``owner: adk`` app that gave none) counts 0.
    """
    chosen = settings if settings is not None else ProjectorSettings()
    cached: dict[str, int] = {}

    def overlap(session_key: str) -> int:
        entry = chosen.compaction_entry(SessionKey(session_key))
        if entry not in cached:
            cached[entry] = chosen.compaction_for(SessionKey(session_key)).overlap_size or 0
        return cached[entry]

    return overlap


@dataclass(frozen=True, slots=True)
class LiveEntry:
    """A session's view after its last committed batch, and what it was selected for."""

    partition: int
    last_offset: int
    overlap_size: int
    view: KeptView


class LiveViews:
    """The sessions' kept views, at most `capacity`; the least recently used is dropped."""

    def __init__(self, overlaps: OverlapSizes, capacity: int = DEFAULT_CAPACITY) -> None:
        """Keep views selected with `overlaps`, at most `capacity` (at least 1) cached."""
        if capacity < 1:
            raise ValueError(f"a live view cache holds at least one session, not {capacity}")
        self._overlaps = overlaps
        self._capacity = capacity
        self._entries: OrderedDict[str, LiveEntry] = OrderedDict()

    async def keep(
        self,
        conn: Connection,
        schema: str,
        rows: Sequence[EventRow],
        events: Sequence[LoggedEvent],
    ) -> dict[str, LiveEntry]:
        """Write the views of the sessions `rows` touch (statuses final; in the transaction).

        Runs before the batch's ``session_index`` upsert (the stored last offsets tell
        whether a cached view is current) and writes after it: call :meth:`write` then.
        Returns the entries to cache once the transaction commits (:meth:`put_all`).
        """
        sessions: dict[str, list[int]] = {}
        for index, row in enumerate(rows):
            sessions.setdefault(row.session_key, []).append(index)
        stored = await _stored_last(conn, schema, list(sessions))
        entries: dict[str, LiveEntry] = {}
        missed: list[str] = []
        for key, indexes in sessions.items():
            indexes.sort(key=lambda index: rows[index].offset)
            first = rows[indexes[0]]
            overlap = self._overlaps(key)
            cached = self._entries.get(key)
            current = (
                cached is not None
                and cached.partition == first.partition
                and cached.last_offset == stored.get(key)
                and cached.overlap_size == overlap
            )
            batch = [
                (rows[i].offset, events[i].envelope.event, str(rows[i].status)) for i in indexes
            ]
            end = rows[indexes[-1]].offset + 1
            view = batch_view(cached.view if current and cached else None, batch, overlap, end)
            if view is None:
                missed.append(key)
            else:
                entries[key] = LiveEntry(first.partition, end - 1, overlap, view)
        found = await _held_records(conn, schema, missed)
        for key in missed:
            last = rows[sessions[key][-1]]
            held = [(record.offset, record.envelope.event) for record in found.get(key, [])]
            overlap = self._overlaps(key)
            view = view_of(held, overlap, last.offset + 1)
            entries[key] = LiveEntry(last.partition, last.offset, overlap, view)
        return entries

    def put_all(self, entries: dict[str, LiveEntry]) -> None:
        """Cache the views of a committed batch."""
        for key, entry in entries.items():
            self._entries[key] = entry
            self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


async def write_views(conn: Connection, schema: str, entries: dict[str, LiveEntry]) -> None:
    """Store each session's ``live_from`` and ``live_extra`` (its row exists: after the upsert)."""
    if not entries:
        return
    keys = sorted(entries)
    await conn.execute(
        sql.SQL(
            "UPDATE {} AS s SET live_from = v.live_from, live_extra = v.extra::bigint[]"
            " FROM unnest(%s::text[], %s::bigint[], %s::text[]) AS v(session_key, live_from, extra)"
            " WHERE s.session_key = v.session_key"
        ).format(sql.Identifier(schema, "session_index")),
        (
            keys,
            [entries[key].view.live_from for key in keys],
            ["{" + ",".join(map(str, entries[key].view.extra)) + "}" for key in keys],
        ),
    )


async def _stored_last(conn: Connection, schema: str, keys: Sequence[str]) -> dict[str, int]:
    """Each session's ``session_index.last_offset`` before the batch's upsert."""
    cursor = await conn.execute(
        sql.SQL("SELECT session_key, last_offset FROM {} WHERE session_key = ANY(%s)").format(
            sql.Identifier(schema, "session_index")
        ),
        (list(keys),),
    )
    return {str(key): int(offset) for key, offset in await cursor.fetchall()}


async def _held_records(
    conn: Connection, schema: str, keys: Sequence[str]
) -> dict[str, list[LoggedEvent]]:
    """Every held row of each of `keys`, as records, in offset order."""
    if not keys:
        return {}
    return await stored_records(conn, schema, keys, statuses=sorted(HELD))
