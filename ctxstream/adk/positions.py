"""Read-your-writes for the session service: the offsets a read must see in SQL first. Async.

The read model lags the log: the sink commits batches. Before a read the service waits
until the sink has passed (a) every record this service appended (per partition, its
latest: a user-state write in session A must be in the ``state`` view before session B,
created right after, is merged) and (b) the session's last offset as its projector
reports it (another writer's records). The wait itself is the catalog's
(:meth:`ctxstream.sessions.catalog.SessionCatalog.wait_for_offset`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from ctxstream.sessions.catalog import SessionCatalog
from schemas.kafka.partitioning import session_partition

#: How long a read waits for the sink by default (a batch, a busy database).
SINK_WAIT_S: Final = 30.0
#: How many sessions' latest own offsets are remembered (the oldest are long folded).
REMEMBERED_SESSIONS: Final = 65_536


class Positions:
    """The latest offset this service wrote on each partition of `events`, and the waits."""

    def __init__(self, catalog: SessionCatalog, partitions: int, *, timeout_s: float) -> None:
        """Wait through `catalog`; `events` has `partitions` partitions."""
        self._catalog, self._partitions, self._timeout_s = catalog, partitions, timeout_s
        self._written: dict[int, tuple[str, int]] = {}
        self._by_key: OrderedDict[str, int] = OrderedDict()

    def wrote(self, session_key: str, offset: int) -> None:
        """Note that this service's record of `session_key` landed at `offset`."""
        partition = session_partition(session_key.encode(), self._partitions)
        if offset > self._written.get(partition, ("", -1))[1]:
            self._written[partition] = (session_key, offset)
        self._by_key[session_key] = max(offset, self._by_key.pop(session_key, -1))
        if len(self._by_key) > REMEMBERED_SESSIONS:
            self._by_key.popitem(last=False)

    def written(self, session_key: str) -> int | None:
        """The latest offset this service wrote for `session_key` (None: none)."""
        return self._by_key.get(session_key)

    async def sunk(self, session_key: str | None = None, last_offset: int | None = None) -> None:
        """Wait until the sink passed this service's writes, and `session_key`'s `last_offset`.

        Raises:
            ReadTimeoutError: The sink had not got there within the timeout.
        """
        waits = dict(self._written)
        if session_key is not None and last_offset is not None:
            partition = session_partition(session_key.encode(), self._partitions)
            if last_offset > waits.get(partition, ("", -1))[1]:
                waits[partition] = (session_key, last_offset)
        for key, offset in waits.values():
            await self._catalog.wait_for_offset(key, offset, timeout_s=self._timeout_s)
