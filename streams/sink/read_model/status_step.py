"""What a batch writes into the read model besides its rows' bytes: statuses and memories.

:class:`StatusStep` is the hook :func:`~streams.sink.fence.write_batch` calls inside the
batch's transaction: before the rows are copied it classifies them
(:mod:`streams.sink.read_model.batch_statuses`), after, it updates the earlier rows whose
status changed, writes the memories, the ``state`` view's tables
(:mod:`streams.sink.read_model.state_tables`) and the sessions' ``session_index`` rows
(:mod:`streams.sink.read_model.session_index`) with their live views
(:mod:`streams.sink.read_model.live_views`). :meth:`StatusStep.committed` hands the
sessions' states to the cache once the transaction is committed; after a failure the worker
drops them.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from streams.sink.read_model.batch_memories import MemoryApps, MemoryPlan
from streams.sink.read_model.batch_statuses import ClassifiedBatch, classify_batch, status_text
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.live_views import LiveEntry, LiveViews, write_views
from streams.sink.read_model.session_index import index_sessions
from streams.sink.read_model.state_tables import keep_state, state_plan
from streams.sink.rows import EventRow


class StatusStep:
    """The classification, status updates and memories of one batch of rows."""

    def __init__(
        self,
        cache: HistoryCache,
        rows: Sequence[EventRow],
        events: Sequence[LoggedEvent],
        memory_apps: MemoryApps,
        live: LiveViews | None = None,
    ) -> None:
        """The step of `rows` (decoded as `events`, same order), with `cache`'s states.

        `live` keeps the sessions' live views (None: an uncached one, overlap 0).
        """
        self._cache = cache
        self._live = live if live is not None else LiveViews(lambda _: 0, capacity=1)
        self._views: dict[str, LiveEntry] = {}
        self._rows = rows
        self._events = events
        self._memory_apps = memory_apps
        self._classified: ClassifiedBatch | None = None

    @property
    def sessions(self) -> set[str]:
        """The sessions the batch touches."""
        return {row.session_key for row in self._rows}

    async def before_rows(self, conn: Connection, schema: str) -> Sequence[EventRow]:
        """The rows to copy, each with its status (in the transaction, after the fence)."""
        self._classified = await classify_batch(
            conn, schema, self._cache, self._rows, self._events, MemoryPlan(self._memory_apps)
        )
        return self._classified.rows

    async def after_rows(self, conn: Connection, schema: str) -> None:
        """Update the earlier rows' changed statuses; write the memories, state, ``session_index``.

        A row made ``deleted`` keeps the status it had before (``status_before_deletion``):
        the one the batch gave it last, else the stored one.
        """
        classified = self._classified
        if classified is None:
            raise RuntimeError("after_rows before before_rows")
        if classified.updates:
            places = sorted(classified.updates)
            await conn.execute(
                sql.SQL(
                    "UPDATE {} AS r SET status = u.status, status_before_deletion = CASE"
                    " WHEN u.status = 'deleted' THEN coalesce(u.before, r.status) END"
                    " FROM unnest(%s::integer[], %s::bigint[], %s::text[], %s::text[])"
                    ' AS u(partition, "offset", status, before)'
                    ' WHERE r.partition = u.partition AND r."offset" = u."offset"'
                ).format(sql.Identifier(schema, "event_rows")),
                (
                    [p for p, _ in places],
                    [o for _, o in places],
                    [str(classified.updates[place]) for place in places],
                    [status_text(classified.before_deletion.get(place)) for place in places],
                ),
            )
        await classified.memories.write(conn, schema)
        plan = state_plan(classified.rows, self._events, classified.updates, classified.owners)
        await keep_state(conn, schema, plan)
        writers = {key: state.writer_offset for key, (_, state) in classified.states.items()}
        views = await self._live.keep(conn, schema, classified.rows, self._events)
        await index_sessions(conn, schema, classified.rows, writers)
        await write_views(conn, schema, views)
        self._views = views

    def committed(self) -> None:
        """The transaction committed: cache the sessions' states after the batch."""
        if self._classified is not None:
            self._cache.put_all(self._classified.states)
            self._live.put_all(self._views)
