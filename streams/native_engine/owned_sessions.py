"""The sessions of the partitions a native engine owns, as its last commits left them.

What the read service is given instead of the engine
(:class:`streams.reads.sessions.CommittedSessions`): a session's committed
projection (the session cache, or on a miss a rebuild from the partition's
store), its whole projection rebuilt from its history on `events`, and
where its history starts (also what the fold's fork lookups ask). Every
answer is committed state only while the read gate says the partition is
``committed``, taken without yielding; nothing here writes the engine's
state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from projections.fold.projection import NO_OFFSET, SessionProjection
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from streams.batch import SessionCache, inherit, rebuild_session, stored_header
from streams.native_engine.ownership import OwnedPartition, PartitionOwnership
from streams.projector_settings import ProjectorSettings
from streams.session_history import SessionHistory
from streams.session_table import header_key, request_key

Quarantined = Callable[[tuple[int, SessionKey]], bool]
"""Whether the batch step quarantined the session of (partition, key)."""


class OwnedSessions:
    """Committed projections of the owned partitions' sessions, for reads."""

    def __init__(
        self,
        settings: ProjectorSettings,
        ownership: PartitionOwnership,
        cache: SessionCache,
        *,
        partitions: Callable[[], int],
        quarantined: Quarantined,
    ) -> None:
        """Sessions of `ownership`'s partitions, cached in `cache` by the batch step.

        `partitions` is the `events` partition count, as known now.
        """
        self._settings = settings
        self._ownership = ownership
        self._cache = cache
        self._partitions = partitions
        self._quarantined = quarantined
        self._history = SessionHistory(settings)  # reads take turns on their own reader

    async def stop(self) -> None:
        """Close the history reader."""
        await self._history.stop()

    def partition_of(self, session_key: SessionKey) -> int:
        """The `events` partition of `session_key`, over the broker's partition count."""
        return session_partition(session_key.encode(), self._partitions())

    def history_start(self, partition: int, session_key: SessionKey) -> int | None:
        """Where the session's history starts on `partition`, when this engine owns it.

        Its first applied offset from the stored header (committed state);
        for a session without one, the partition's committed position: none
        of its records is below it. None when the partition is not owned
        here (or the header predates first offsets), and for a quarantined
        session, whose records below that position were refused, not absent
        (a fork prepared after its source's fork record was quarantined, in
        an earlier batch, still reads that record and refuses the cycle).
        """
        owned = self._ownership.get(partition)
        if owned is None:
            return None
        if self._quarantined((partition, session_key)):
            return None
        header = stored_header(session_key, partition, owned.read)
        if header.last_offset == NO_OFFSET:
            return owned.next_offset
        return header.first_offset if header.first_offset != NO_OFFSET else None

    def first_offset(self, partition: int, session_key: SessionKey) -> int:
        """The session's first applied offset, from its stored header (``-1``: none or not known).

        Committed state while the partition's gate phase is ``committed``.
        """
        return stored_header(session_key, partition, self._owned(partition).read).first_offset

    def committed_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection as its partition's last committed batch left it.

        The one place reads take a projection from the engine's state: the
        session cache, or on a miss a rebuild from the partition's store (its
        checkpoint and the chunks since: O(what the session holds)). The
        rebuild is not cached: only the batch step writes the cache.

        Raises:
            Exception: The session's stored entries cannot be read back.
        """
        read = self._owned(partition).read
        cached = self._cache.get((partition, session_key))
        if cached is not None:
            return cached.projection
        return rebuild_session(self._settings, session_key, partition, read).projection

    async def whole_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection rebuilt from its history on `events`.

        For a read that needs what the committed projection released (another
        agent's or branch's contents): O(the partition between the session's
        first record and its last), never cached. The records are read on
        the loop (aiokafka's), the fold runs in a thread over the entries it
        needs, taken from the store first (committed state, read at once).
        """
        owned = self._owned(partition)
        header = stored_header(session_key, partition, owned.read)
        taken = {
            key: owned.store.get(key) for key in (header_key(session_key), request_key(session_key))
        }
        records = await self._history.records(
            partition, session_key, header.first_offset, header.last_offset + 1
        )
        head = records[0] if records else None
        line = await self._history.inherited(head, self._partitions(), self.history_start)
        inheritance = None if line is None else inherit(self._settings, session_key, line)

        def read(partition: int, key: bytes) -> bytes | None:
            return taken.get(key)

        session = await asyncio.to_thread(
            rebuild_session,
            self._settings,
            session_key,
            partition,
            read,
            history=records,
            inherited=inheritance,
        )
        return session.projection

    def _owned(self, partition: int) -> OwnedPartition:
        """The owned partition.

        Raises:
            KeyError: This engine does not own `partition`.
        """
        owned = self._ownership.get(partition)
        if owned is None:
            raise KeyError(partition)
        return owned
