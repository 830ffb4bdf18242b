"""The compaction requests the faust engine waits on: sent, noted, re-emitted or refused.

A batch's new requests are sent and noted as in flight
(:class:`~streams.pending_requests.PendingRequests`, its rules); summaries
the batch folded end their wait. The app's ``request_retry_timer`` calls
:meth:`RequestRetries.retry_due` every ``request_check_interval_s``: a
request no summary answered within ``compaction_request_timeout_s`` is
emitted again, and one out of attempts is refused on `events`. After a start
or an assignment the in-flight requests of the owned partitions are learned
again from the table (``r:``), so a request lost with a crash is re-emitted
one timeout after the restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from schemas.compaction_request import CompactionRequest
from schemas.kafka.partitioning import session_partition
from streams.batch import BatchOutcome
from streams.faust_engine.output_sender import OutputSender
from streams.pending_requests import PendingRequest, PendingRequests
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.request_records import stored_request, timed_out_refusal
from streams.session_table import session_of_request_key


class RequestRetries:
    """In-flight requests of the owned sessions, and the job that retries or refuses them."""

    def __init__(
        self,
        settings: ProjectorSettings,
        *,
        partitions: Callable[[], int],
        table: Any,
        sender: OutputSender,
        metrics: ProjectorMetrics,
    ) -> None:
        """Retry by `settings`' rules through `sender`, learning from `table` (faust's).

        `partitions` is the `events` partition count, as the worker knows it now.
        """
        self._settings = settings
        self._table = table
        self._sender = sender
        self._metrics = metrics
        self._partitions = partitions
        self.pending = PendingRequests()
        self._rescan = False

    async def send_first(self, outcome: BatchOutcome, now: float) -> list[Any]:
        """Send a batch's new requests and note what it changed in flight; the delivery futures.

        Its new requests become in flight at `now` (wall clock), requests its
        summaries answered are done, and requests read back from the table
        are in flight unless known already.
        """
        sent: list[Any] = []
        for request, partition in outcome.requests:
            sent.append(await self._send(request, "first"))
            self.pending.emitted(request, partition, now)
        for session_key in outcome.answered:
            self.pending.answered(session_key)
        for request, partition in outcome.learned:
            self.pending.learned(request, partition, now)
        return sent

    def assigned(self) -> None:
        """Learn the in-flight requests of the new partitions at the next :meth:`retry_due`."""
        self._rescan = True

    def revoked(self, partitions: set[int]) -> None:
        """Forget the requests of partitions this worker no longer owns."""
        self.pending.revoked(partitions)

    async def retry_due(self, owned: set[int], now: float) -> None:
        """Re-emit every in-flight request older than the timeout; refuse those out of attempts.

        Returns once the broker has every record it sent.
        """
        if self._rescan:
            self._rescan = False
            self._learn_requests(owned, now)
        settings = self._settings
        due = self.pending.due(
            now, settings.compaction_request_timeout_s, settings.compaction_request_max_attempts
        )
        sent = [await self._send(retry, "retry") for retry in due.retries]
        sent += [await self._send_refusal(pending, now) for pending in due.refused]
        await asyncio.gather(*sent)

    async def _send(self, request: CompactionRequest, kind: str) -> Any:
        sent = await self._sender.send_request(request)
        self._metrics.requests_emitted.labels(trigger=request.trigger, kind=kind).inc()
        return sent

    async def _send_refusal(self, pending: PendingRequest, now: float) -> Any:
        """Append the refusal of a request no summary answered after its last attempt."""
        request = pending.request
        envelope = timed_out_refusal(
            request,
            app_id=self._settings.app_id,
            timeout_s=self._settings.compaction_request_timeout_s,
            now=now,
        )
        self._metrics.requests_refused.inc()
        return await self._sender.send_refusal(request, envelope, pending.partition)

    def _learn_requests(self, owned: set[int], now: float) -> None:
        """Read the ``r:`` keys of the owned partitions into the pending requests.

        O(keys): only keys are listed, and only ``r:`` values are read. A
        stored request that no longer decodes is logged and left alone (its
        session is quarantined when it is next touched).
        """
        partitions = self._partitions()
        for key in list(self._table.keys()):
            session_key = session_of_request_key(key)
            if session_key is None:
                continue
            partition = session_partition(session_key.encode(), partitions)
            if partition not in owned:
                continue
            value = self._table.get(key)
            if value is None:
                continue
            request = stored_request(session_key, value)
            if request is not None:
                self.pending.learned(request, partition, now)
