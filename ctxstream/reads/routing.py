"""A read sent to the worker that owns the session's partition, routed again when it fails.

The owner is the newest claim of the partition on `partition-owners`
(:class:`streams.reads.owners.PartitionOwners`), read at the first read and
again only when routing fails; a worker that lost the partition refuses (its
refusal may name the new owner, asked at once). Between attempts the pause
doubles from :data:`FIRST_BACKOFF_S` to :data:`MAX_BACKOFF_S`, until the
read's ``timeout_s`` runs out: then :class:`~ctxstream.errors.NoPartitionOwnerError`
names the last failure. Each attempt asks the worker to wait a little less than
is left (:func:`worker_wait`), so its refusal arrives in time. See
``ctxstream/reads/README.md``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final

import aiohttp
from aiokafka.errors import KafkaConnectionError, KafkaError
from pydantic import ValidationError
from yarl import URL

from ctxstream.broker_calls import unreachable
from ctxstream.errors import NoPartitionOwnerError
from ctxstream.reads.end_offsets import EndOffsets
from ctxstream.reads.refusals import routing_failure
from schemas.counted import counted
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey
from schemas.log_text import shown
from schemas.read_protocol import (
    MAX_READ_WAIT_S,
    ProjectionQuery,
    ReadKind,
    ReadRefusal,
    query_parameters,
    read_path,
)
from schemas.read_secret import ReadKeys, read_keys
from streams.reads.claim import is_read_address
from streams.reads.owners import PartitionOwners

logger = logging.getLogger(__name__)

#: The first pause before a read is sent again; it doubles up to :data:`MAX_BACKOFF_S`.
FIRST_BACKOFF_S: Final = 0.05
MAX_BACKOFF_S: Final = 1.0
#: The most of a read's remaining time kept for the answer to arrive after the worker's
#: wait (at most a fifth of what is left).
ANSWER_MARGIN_S: Final = 0.5
#: The shortest wait a read asks of a worker.
_MIN_WAIT_S: Final = 0.001


def worker_wait(remaining: float) -> float:
    """How long to ask a worker to wait, with `remaining` seconds left for the whole exchange.

    Example: 10 s left -> 9.5 s (:data:`ANSWER_MARGIN_S` kept); 1 s left -> 0.8 s.
    """
    wait = max(_MIN_WAIT_S, remaining - min(ANSWER_MARGIN_S, remaining / 5))
    return min(wait, MAX_READ_WAIT_S)


class ReadRouter:
    """Reads routed to partition owners: the claims' reader, the HTTP session, the end offsets.

    Each is opened at the first read that needs it; :meth:`close` closes them.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        """Routing on the deployment `settings` name; nothing connects yet."""
        self._settings = settings
        self.owners = PartitionOwners(settings)
        self.ends = EndOffsets(settings)
        self._http: aiohttp.ClientSession | None = None
        self.directory_read = False

    async def close(self) -> None:
        """Close the HTTP session and the Kafka readers, if they were opened."""
        http, self._http = self._http, None
        try:
            if http is not None:
                await http.close()
        finally:
            try:
                await self.ends.close()
            finally:
                await self.owners.close()
                self.directory_read = False

    async def read(self, session_key: SessionKey, kind: ReadKind, query: ProjectionQuery) -> bytes:
        """The body of the owner's answer, asking again where routing sends it.

        Raises:
            BrokerUnavailableError: No broker could be reached at the bootstrap address.
            InvalidArgumentError: ``min_offset`` or ``as_of`` is past the partition's end.
            ReadTimeoutError: The owner had not folded ``min_offset`` in time.
            NoPartitionOwnerError: No owner answered before ``timeout_s`` ran out.
            SessionNotFoundError: The session has no records where the owner answered.
            SummaryNotFoundError: The session has no such summary (``expand``).
            ContextReadError: The owner refused the read for another reason.
        """
        deadline = time.monotonic() + query.timeout_s
        if not self.directory_read:
            await self.refresh(deadline)
        backoff = FIRST_BACKOFF_S
        partition: int | None = None
        checked = False
        failure = "no worker has claimed it"
        hint: str | None = None
        attempts = 0
        while (remaining := deadline - time.monotonic()) > 0:
            count = self.owners.events_partitions
            if count is not None:
                partition = session_partition(session_key.encode(), count)
                if not checked:
                    checked = True
                    await self.ends.check_written(partition, query, deadline)
            claim = self.owners.owner(partition) if partition is not None else None
            address = hint or (claim.address if claim is not None else None)
            followed, hint = hint is not None, None
            if address is not None and (remaining := deadline - time.monotonic()) > 0:
                attempts += 1
                asked = query.model_copy(update={"timeout_s": worker_wait(remaining)})
                answer = await self.ask(address, session_key, kind, asked, remaining)
                if isinstance(answer, bytes):
                    return answer
                if isinstance(answer, str):
                    failure = answer
                else:
                    failure = routing_failure(session_key, address, answer, query)
                    owner = answer.owner
                    if owner not in (None, address) and not followed and is_read_address(owner):
                        hint = owner
                        continue  # the refusing worker named the owner: ask it at once
            await asyncio.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
            backoff = min(2 * backoff, MAX_BACKOFF_S)
            await self.refresh(deadline)
        raise NoPartitionOwnerError(
            session_key=session_key,
            partition=partition,
            reason=f"{failure} ({counted(attempts, 'attempt')} within {query.timeout_s} s)",
        )

    async def ask(
        self,
        address: str,
        session_key: SessionKey,
        kind: ReadKind,
        query: ProjectionQuery,
        remaining: float,
        *,
        body: bytes | None = None,
    ) -> bytes | ReadRefusal | str:
        """One request: the answer's body, the refusal, or why no answer came (a string).

        A read with a `body` is a POST of it as JSON. The exchange, a wait for a
        connection included, ends when `remaining` runs out.
        """
        http = self._http
        if http is None:
            http = self._http = _session(read_keys(self._settings), self._settings)
        url = URL(f"http://{address}{read_path(session_key, kind)}", encoded=True)
        timeout = aiohttp.ClientTimeout(total=remaining)
        try:
            async with http.request(
                "GET" if body is None else "POST",
                url.with_query(query_parameters(query)),
                data=body,
                headers=None if body is None else {"Content-Type": "application/json"},
                timeout=timeout,
            ) as response:
                answered = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            logger.info(
                "read not answered session=%s worker=%s reason=%s",
                shown(session_key),
                shown(address),
                shown(f"{type(exc).__name__}: {exc}", 300),
            )
            return f"the partition's owner did not answer ({type(exc).__name__})"
        if status == 200:
            return answered
        try:
            return ReadRefusal.model_validate_json(answered)
        except ValidationError:
            logger.info("read answered status=%d worker=%s", status, shown(address))
            return f"the partition's owner answered {status} with no refusal of a read"

    async def refresh(self, deadline: float) -> None:
        """Read the claims committed since the last refresh, within the read's time.

        Raises:
            BrokerUnavailableError: No broker at the bootstrap address accepted a
                connection (at once: a read need not wait its time out for it).
        """
        try:
            await asyncio.wait_for(self.owners.refresh(), max(0.001, deadline - time.monotonic()))
        except KafkaConnectionError as exc:
            raise unreachable(self._settings.kafka_bootstrap) from exc
        except (TimeoutError, KafkaError) as exc:
            logger.warning("partition owners not read topic=%s reason=%r", self.owners.topic, exc)
            return
        self.directory_read = True


def _session(keys: ReadKeys, settings: KafkaSettings) -> aiohttp.ClientSession:
    """The HTTP session of reads: the credential on every request, the pool's size set."""
    connector = aiohttp.TCPConnector(limit=settings.read_connections, limit_per_host=0)
    return aiohttp.ClientSession(connector=connector, headers={"Authorization": keys.authorization})
