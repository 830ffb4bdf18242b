"""The session projections a worker holds in memory, bounded by the bytes they retain. No I/O.

A cached projection keeps every record of its session, so the bound is on
their estimated memory (:attr:`CachedSession.size`, from
:func:`schemas.codec.decode_envelope_sized`), not on sessions or events. The
batch step evicts after each session it folds; an evicted session is rebuilt
from the table when touched again (:func:`streams.batch.stored.rebuild_session`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from projections.compaction.config import CompactionConfig
from projections.contents.context_digest import ContentPieces, ContextDigest
from projections.fold.projection import NO_OFFSET, SessionProjection
from schemas.compaction_request import CompactionRequest
from schemas.keys import Offset, SessionKey

SessionId = tuple[int, SessionKey]
"""A session as the worker holds it: its `events` partition and its key."""


@dataclass(slots=True)
class CachedSession:
    """A session's projection in the worker's memory, with what its header adds.

    Attributes:
        projection: The projection.
        partition: The session's `events` partition.
        chunks: Chunks stored in the table.
        events: Records the chunks hold.
        request: The in-flight request as stored (``r:``), if any.
        config: The compaction config of the session's app.
        size: Estimated bytes the projection's records retain in memory.
        base: The first chunk the stored checkpoint does not cover (0: none).
        first_offset: Offset of the session's first applied record (-1: none).
        digest: The context digest its last snapshot left (None: none yet), so
            the next snapshot assembles only what came since.
        pieces: The content digests its last snapshot's context carried
            (None: none yet), so the next one serializes only new contents.
    """

    projection: SessionProjection
    partition: int
    chunks: int
    events: int
    request: CompactionRequest | None
    config: CompactionConfig
    size: int = 0
    base: int = 0
    first_offset: Offset = NO_OFFSET
    digest: ContextDigest | None = field(default=None, compare=False)  # derived, never stored
    pieces: ContentPieces | None = field(default=None, compare=False)  # derived, never stored


class SessionCache:
    """The projections of recently touched sessions, bounded by the bytes they retain.

    Beyond the bound the least recently used sessions are dropped; the session
    being folded is never dropped.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._sessions: OrderedDict[SessionId, CachedSession] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def bytes(self) -> int:
        """Estimated bytes the cached sessions retain."""
        return self._bytes

    def get(self, key: SessionId) -> CachedSession | None:
        """The cached session, marked as most recently used."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    def put(self, key: SessionId, session: CachedSession) -> None:
        """Cache `session` as the most recently used one."""
        self.drop(key)
        self._sessions[key] = session
        self._bytes += session.size

    def grew(self, session: CachedSession, size: int) -> None:
        """Account `size` more bytes retained by the cached `session`."""
        session.size += size
        self._bytes += size

    def drop(self, key: SessionId) -> None:
        """Forget one session (it is rebuilt from the table when touched again)."""
        dropped = self._sessions.pop(key, None)
        if dropped is not None:
            self._bytes -= dropped.size

    def evict(self, keep: SessionId | None = None) -> None:
        """Drop least recently used sessions, never `keep`, until the cache fits its bound."""
        while self._bytes > self._max_bytes and self._sessions:
            oldest = next(iter(self._sessions))
            if oldest == keep:
                if len(self._sessions) == 1:
                    return
                self._sessions.move_to_end(oldest)
                continue
            self.drop(oldest)

    def revoked(self, partitions: set[int]) -> None:
        """Drop the sessions of partitions this worker no longer owns."""
        for key in [k for k in self._sessions if k[0] in partitions]:
            self.drop(key)
