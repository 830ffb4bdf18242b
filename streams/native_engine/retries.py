"""The compaction requests the native engine waits on: sent, noted, re-emitted or refused.

The twin of :mod:`streams.faust_engine.request_retries`, inside transactions:
a batch's new requests are sent in its partition's transaction and noted as
in flight once it committed (:class:`~streams.pending_requests.PendingRequests`,
its rules). Every ``request_check_interval_s`` the consume loop asks
:meth:`RequestRetries.retry_due`: a request no summary answered within
``compaction_request_timeout_s`` is emitted again, and one out of attempts
is refused on `events`, each partition's in one transaction of its producer.
A restored partition's in-flight requests are learned from its store
(``r:``), so a request lost with a crash is re-emitted one timeout after the
restart.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.kafka.partitioning import session_partition
from streams.batch import BatchOutcome
from streams.native_engine.store import PartitionStore
from streams.pending_requests import PendingRequests
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.request_records import log_emission, stored_request, timed_out_refusal
from streams.session_table import session_of_request_key


class Sends(Protocol):
    """The sends of one open transaction (:class:`schemas.kafka.transaction.Transaction`)."""

    async def send(
        self, topic: str, *, key: bytes | None, value: bytes | None, partition: int | None = None
    ) -> object:
        """Send one record inside the transaction."""
        ...


Transactions = Callable[[int], AbstractAsyncContextManager[Sends] | None]
"""A new transaction of the partition's producer; None when the partition is not owned."""


class RequestRetries:
    """In-flight requests of the owned sessions, and the job that retries or refuses them."""

    def __init__(
        self,
        settings: ProjectorSettings,
        metrics: ProjectorMetrics,
        *,
        partitions: Callable[[], int],
    ) -> None:
        """Retry by `settings`' rules.

        `partitions` is the `events` partition count, as the engine knows it now.
        """
        self._settings = settings
        self._metrics = metrics
        self._partitions = partitions
        self._requests = settings.topic("compaction-requests")
        self._events = settings.topic("events")
        self.pending = PendingRequests()
        self._retry_at = 0.0

    def emission(self, request: CompactionRequest, kind: str) -> tuple[str, bytes, bytes]:
        """`request`'s record (topic, key, value), logged and counted as emitted (`kind`).

        The engine sends a batch's first emissions itself, with the batch's
        timing stamps (:mod:`schemas.kafka.timing`).
        """
        log_emission(request)
        self._metrics.requests_emitted.labels(trigger=request.trigger, kind=kind).inc()
        return self._requests, request.session_key.encode(), encode(request)

    async def send(self, sends: Sends, request: CompactionRequest, kind: str) -> None:
        """Send `request` to `compaction-requests` in the open transaction `sends`."""
        topic, key, value = self.emission(request, kind)
        await sends.send(topic, key=key, value=value)

    def committed(self, outcome: BatchOutcome, now: float) -> None:
        """Note what a committed batch changed in flight, at `now` (wall clock).

        Its new requests are in flight, requests its summaries answered are
        done, and requests read back from the store are in flight unless
        known already.
        """
        for request, partition in outcome.requests:
            self.pending.emitted(request, partition, now)
        for session_key in outcome.answered:
            self.pending.answered(session_key)
        for request, partition in outcome.learned:
            self.pending.learned(request, partition, now)

    def learn(self, partition: int, store: PartitionStore, now: float) -> None:
        """The restored partition's stored in-flight requests (``r:`` keys), timed from `now`."""
        for key in store.keys_with_prefix(b"r:"):
            session_key = session_of_request_key(key)
            value = store.get(key)
            if session_key is None or value is None:
                continue
            request = stored_request(session_key, value)
            if request is not None:
                self.pending.learned(request, partition, now)

    def revoked(self, partitions: set[int]) -> None:
        """Forget the requests of partitions this worker no longer owns."""
        self.pending.revoked(partitions)

    async def retry_if_due(self, now: float, transactions: Transactions) -> None:
        """:meth:`retry_due`, at most once every ``request_check_interval_s``."""
        if now < self._retry_at:
            return
        self._retry_at = now + self._settings.request_check_interval_s
        await self.retry_due(now, transactions)

    async def retry_due(self, now: float, transactions: Transactions) -> None:
        """Re-emit in-flight requests older than the timeout; refuse those out of attempts.

        One transaction per partition, in partition order. A partition no
        longer owned is skipped: its next owner learns its requests anew.
        """
        settings = self._settings
        due = self.pending.due(
            now, settings.compaction_request_timeout_s, settings.compaction_request_max_attempts
        )
        retries: dict[int, list[CompactionRequest]] = {}
        for retry in due.retries:
            partition = session_partition(retry.session_key.encode(), self._partitions())
            retries.setdefault(partition, []).append(retry)
        refusals: dict[int, list[CompactionRequest]] = {}
        for pending in due.refused:
            refusals.setdefault(pending.partition, []).append(pending.request)
        for partition in sorted(set(retries) | set(refusals)):
            opened = transactions(partition)
            if opened is None:
                continue  # revoked: the partition's next owner learns its requests anew
            async with opened as sends:
                for retry in retries.get(partition, []):
                    await self.send(sends, retry, "retry")
                for request in refusals.get(partition, []):
                    await self._refuse(sends, request, partition, now)

    async def _refuse(
        self, sends: Sends, request: CompactionRequest, partition: int, now: float
    ) -> None:
        """Append the refusal of a request no summary answered after its last attempt."""
        envelope = timed_out_refusal(
            request,
            app_id=self._settings.app_id,
            timeout_s=self._settings.compaction_request_timeout_s,
            now=now,
        )
        await sends.send(
            self._events,
            key=request.session_key.encode(),
            value=encode(envelope),
            partition=partition,
        )
        self._metrics.requests_refused.inc()
