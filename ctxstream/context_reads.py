"""Context and projection reads, sent to the projector that owns the session's partition.

Interactive queries: a session's state lives in the memory of the native
worker that owns its `events` partition, and that worker answers
(:mod:`streams.reads.web`). The client finds it on the deployment's
`partition-owners` topic, where each worker claims the partitions it
restored (:mod:`streams.reads.owners`): the newest claim of the
session's partition names the address to ask.

The claims are read at the first read and again only when routing fails,
as a Kafka client refreshes its metadata: a worker that lost the partition
refuses the read (421, naming the new owner when it knows it), and a worker
that stopped cannot be reached. The client then asks the named owner at
once, or reads the claims again and retries after a backoff (50 ms,
doubling up to 1 s), until the read's ``timeout_s`` runs out; then it raises
:class:`~ctxstream.errors.NoPartitionOwnerError` with the last failure.
``timeout_s`` bounds the whole call, routing, retries, a wait for one of the
:attr:`~schemas.kafka.settings.KafkaSettings.read_connections` connections
and the answer included: each attempt asks the worker to wait for
``min_offset`` a little less than is left (:data:`ANSWER_MARGIN_S`), so its
refusal arrives in time, and gives the HTTP exchange no more than is left.

The read plane is authenticated (:mod:`schemas.read_secret`): routing
follows only claims signed with the deployment's read secret, every request
carries the credential derived from it, and an answer that names another
session than the one asked for is refused. Reasons name no worker address
(they reach the HTTP API's callers); the log does.

``min_offset`` and ``as_of`` must name a written record of the session's
partition: an offset at or past the partition's end offset (its high
watermark) is refused at once with
:class:`~ctxstream.errors.InvalidArgumentError`, without the end offset (a
position of other tenants' traffic). The end offsets are cached, raised by
the offsets this client's appends returned, and read from the broker again
once when an offset is past the cached end.

With ``min_offset`` (the offset ``append`` returned) the answer reflects
every record of the session's partition up to that offset: read-your-writes.
A partition that has not folded it in time raises
:class:`~ctxstream.errors.ReadTimeoutError`. Time travel (``as_of``) waits for
its offset the same way; ``expand`` pages through a summary's covered events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeVar

import aiohttp
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError, KafkaError
from pydantic import ValidationError
from yarl import URL

from ctxstream.broker_calls import unreachable
from ctxstream.errors import (
    ContextReadError,
    InvalidArgumentError,
    InvocationNotFoundError,
    NoPartitionOwnerError,
    OverBudgetError,
    ReadTimeoutError,
    SessionNotFoundError,
    SummaryNotFoundError,
)
from schemas.codec import decode_projection_snapshot
from schemas.counted import counted
from schemas.errors import DecodeError, InvalidSessionKeyError
from schemas.event import Content
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey, validate_session_key
from schemas.log_text import shown
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.read_protocol import (
    MAX_READ_WAIT_S,
    MAX_STORED_EVENTS_ASKED,
    ContextAnswer,
    ContextQuery,
    ExpandedPage,
    ExpandQuery,
    HistoryStart,
    ProjectionQuery,
    ReadKind,
    ReadRefusal,
    RewindDelta,
    RewindQuery,
    SessionAnswer,
    StoredEvents,
    StoredEventsAsk,
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
#: How often duplicate lookups read the claims again, at most, after one found no owner to ask
#: (they are skipped meanwhile).
LOOKUP_REFRESH_S: Final = 5.0
#: The longest a background read of the claims for duplicate lookups may take.
CLAIMS_READ_S: Final = 10.0

QueryT = TypeVar("QueryT", bound=ProjectionQuery)


class ContextReads:
    """Reads of sessions' contexts and projections, each routed to its partition's owner.

    Holds a reader of the `partition-owners` topic and an HTTP session,
    both opened at the first read; :meth:`close` closes them.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        """Reads of the deployment `settings` name; nothing connects yet."""
        self._settings = settings
        self._owners = PartitionOwners(settings)
        self._http: aiohttp.ClientSession | None = None
        self._directory_read = False
        self._ends: dict[int, int] = {}
        self._end_reader: AIOKafkaConsumer | None = None
        self._end_turn = asyncio.Lock()
        self._claims_read: asyncio.Task[None] | None = None
        self._claims_read_at: float | None = None
        self._lookup_stale = False

    async def close(self) -> None:
        """Close the HTTP session and the Kafka readers, if they were opened."""
        http, self._http = self._http, None
        end_reader, self._end_reader = self._end_reader, None
        reading, self._claims_read = self._claims_read, None
        if reading is not None and not reading.done():
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
        try:
            if http is not None:
                await http.close()
        finally:
            try:
                if end_reader is not None:
                    await end_reader.stop()
            finally:
                await self._owners.close()
                self._directory_read = False

    def note_written(self, written: Iterable[tuple[int, int]]) -> None:
        """Note records this process appended (partition, offset): their partitions' ends."""
        for partition, offset in written:
            if offset >= self._ends.get(partition, 0):
                self._ends[partition] = offset + 1

    async def context(
        self,
        session_key: str,
        *,
        agent: str | None,
        branch: str | None,
        include_contents: Literal["default", "none"],
        min_offset: int | None,
        timeout_s: float,
    ) -> list[Content]:
        """The session's assembled contents (see :meth:`ctxstream.Client.context`)."""
        return await self._contents(
            session_key,
            {},
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )

    async def context_as_of(
        self,
        session_key: str,
        offset: int,
        *,
        agent: str | None,
        branch: str | None,
        include_contents: Literal["default", "none"],
        timeout_s: float,
    ) -> list[Content]:
        """The contents right after `offset` (see :meth:`ctxstream.Client.context_as_of`)."""
        return await self._contents(
            session_key,
            {"as_of": "offset"},
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            as_of=offset,
            timeout_s=timeout_s,
        )

    async def contents_json(
        self, session_key: str, renamed: Mapping[str, str], **arguments: object
    ) -> bytes:
        """The contents of a context read as the HTTP API answers them: ``{"contents": [...]}``.

        The worker's answer already holds each content in genai's JSON (camelCase,
        ``None`` left out: :func:`schemas.event.content_to_json`), so its list is
        forwarded as it is, parsed and written again by orjson, never built into
        models: for the long context of an as-of read that is the difference between
        milliseconds and the better part of a second on the caller's loop.
        """
        key, query = _context_query(session_key, renamed, arguments)
        body = await self._read(key, "context", query)
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ContextReadError(session_key=key, reason="the answer is not JSON") from exc
        contents = answer.get("contents") if isinstance(answer, dict) else None
        if not isinstance(contents, list) or not isinstance(answer.get("session_key"), str):
            raise ContextReadError(session_key=key, reason="the answer is not a context")
        _of_session(key, answer["session_key"], answer)
        return orjson.dumps({"contents": contents})

    async def _contents(
        self, session_key: str, renamed: Mapping[str, str], **arguments: object
    ) -> list[Content]:
        """The contents a context read of `arguments` (named as `renamed` says) answers."""
        key, query = _context_query(session_key, renamed, arguments)
        return (await self._answer(key, "context", query, ContextAnswer, "a context")).contents

    async def expand(
        self,
        session_key: str,
        summary_event_id: str,
        *,
        page_size: int,
        page_token: str | None,
        min_offset: int | None,
        timeout_s: float,
    ) -> ExpandedPage:
        """A page of a summary's covered events (see :meth:`ctxstream.Client.expand`)."""
        key = _checked_key(session_key)
        query = _checked(
            ExpandQuery,
            {"summary_id": "summary_event_id"},
            summary_id=summary_event_id,
            page_size=page_size,
            page_token=page_token,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )
        return await self._answer(key, "expand", query, ExpandedPage, "a page of events")

    async def rewind_delta(
        self,
        session_key: str,
        before_invocation_id: str,
        *,
        min_offset: int | None,
        timeout_s: float,
    ) -> dict[str, Any]:
        """The state delta a rewind to `before_invocation_id` carries (reference §10).

        Raises:
            InvocationNotFoundError: No stored event of the session has that invocation.
        """
        key = _checked_key(session_key)
        query = _checked(
            RewindQuery,
            before_invocation_id=before_invocation_id,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )
        delta = await self._answer(
            key, "rewind-delta", query, RewindDelta, "a rewind's state delta"
        )
        return delta.state_delta

    async def projection(
        self, session_key: str, *, min_offset: int | None, timeout_s: float
    ) -> ProjectionSnapshot:
        """The session's projection snapshot (see :meth:`ctxstream.Client.projection`)."""
        key = _checked_key(session_key)
        query = _checked(ProjectionQuery, min_offset=min_offset, timeout_s=timeout_s)
        body = await self._read(key, "projection", query)
        try:
            snapshot = decode_projection_snapshot(body)
        except DecodeError as exc:
            reason = f"the answer is not a snapshot: {exc}"
            raise ContextReadError(session_key=key, reason=reason) from exc
        return _of_session(key, snapshot.session_key, snapshot)

    async def history_start(
        self, session_key: str, *, min_offset: int | None, timeout_s: float
    ) -> HistoryStart:
        """Where the session's history lies on its partition, once its owner folded `min_offset`."""
        key = _checked_key(session_key)
        query = _checked(ProjectionQuery, min_offset=min_offset, timeout_s=timeout_s)
        return await self._answer(key, "history-start", query, HistoryStart, "a history start")

    async def stored_offsets(
        self, session_key: str, digests: Mapping[str, str], *, timeout_s: float
    ) -> dict[str, int]:
        """Of the events `digests` names (id -> digest), those the session stored equal, and where.

        The append door's duplicate lookup: one request to the partition's
        owner as the claims name it, no retry, within `timeout_s`; every
        failure (no owner known, none answering, a refusal) answers ``{}``,
        so an append never depends on a projector, nor waits for the claims
        to be read (:meth:`_claims_unread`).

        Raises:
            InvalidArgumentError: The key is refused (nothing was sent).
        """
        key = _checked_key(session_key)
        deadline = time.monotonic() + timeout_s
        stored: dict[str, int] = {}
        asked = dict(digests)
        ids = list(asked)
        for start in range(0, len(ids), MAX_STORED_EVENTS_ASKED):
            part = {event_id: asked[event_id] for event_id in ids[start:][:MAX_STORED_EVENTS_ASKED]}
            answer = await self._stored_part(key, part, deadline)
            if answer is None:
                break
            stored.update((i, o) for i, o in answer.stored.items() if i in part)
        return stored

    async def _stored_part(
        self, key: SessionKey, digests: dict[str, str], deadline: float
    ) -> StoredEvents | None:
        """One ``stored-events`` read of the owner; None when it was not answered."""
        if self._claims_unread() and not await self._first_claims_read(deadline):
            return None  # being read, in the background: no append waits for the claims
        count = self._owners.events_partitions
        claim = (
            None if count is None else self._owners.owner(session_partition(key.encode(), count))
        )
        remaining = deadline - time.monotonic()
        if claim is None or remaining <= 0:
            self._lookup_stale = True
            return None
        wait = max(_MIN_WAIT_S, remaining - min(ANSWER_MARGIN_S, remaining / 5))
        query = ProjectionQuery(timeout_s=min(wait, MAX_READ_WAIT_S))
        body = orjson.dumps(StoredEventsAsk(digests=digests).model_dump())
        answer = await self._ask(claim.address, key, "stored-events", query, remaining, body=body)
        if not isinstance(answer, bytes):
            self._lookup_stale = True  # a stopped owner, or one that lost the partition
            logger.info("duplicate lookup not answered session=%s", shown(key))
            return None
        try:
            found = StoredEvents.model_validate_json(answer)
        except ValidationError:
            logger.warning("duplicate lookup answer refused session=%s", shown(key))
            return None
        return found if found.session_key == key else None

    async def _first_claims_read(self, deadline: float) -> bool:
        """Whether the client's first read of the claims ended, waited for until `deadline`.

        Only the first: a client that appends once (a command, a script) would
        otherwise never ask, while later refreshes run beside the appends.
        """
        reading = self._claims_read
        remaining = deadline - time.monotonic()
        if self._directory_read or reading is None or remaining <= 0:
            return False
        done, _ = await asyncio.wait({reading}, timeout=remaining)
        return bool(done) and not reading.cancelled() and reading.exception() is None

    def _claims_unread(self) -> bool:
        """Whether a duplicate lookup goes without the claims: unread yet, or paused.

        Starts reading them in the background at the first lookup, and again
        :data:`LOOKUP_REFRESH_S` after a read that named no owner (or named one
        that did not answer); lookups go without meanwhile.
        """
        reading = self._claims_read
        if reading is not None and not reading.done():
            return True
        tried = self._claims_read_at
        if tried is not None and not self._lookup_stale:
            return False
        if tried is not None and time.monotonic() - tried < LOOKUP_REFRESH_S:
            return True
        self._claims_read_at, self._lookup_stale = time.monotonic(), False
        self._claims_read = asyncio.create_task(self._refresh(time.monotonic() + CLAIMS_READ_S))
        return True

    async def _answer(
        self,
        key: SessionKey,
        kind: ReadKind,
        query: ProjectionQuery,
        model: type[SessionAnswerT],
        what: str,
    ) -> SessionAnswerT:
        """The owner's answer to a `kind` read, as `model`, once it is about `key`.

        Raises:
            ContextReadError: The answer is not `what` (a `model`), or is another session's.
        """
        body = await self._read(key, kind, query)
        try:
            answer = model.model_validate_json(body)
        except ValidationError as exc:
            reason = f"the answer is not {what}: {shown(str(exc), 300)}"
            raise ContextReadError(session_key=key, reason=reason) from exc
        return _of_session(key, answer.session_key, answer)

    async def _read(self, session_key: SessionKey, kind: ReadKind, query: ProjectionQuery) -> bytes:
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
        if not self._directory_read:
            await self._refresh(deadline)
        backoff = FIRST_BACKOFF_S
        partition: int | None = None
        checked = False
        failure = "no worker has claimed it"
        hint: str | None = None
        attempts = 0
        while (remaining := deadline - time.monotonic()) > 0:
            count = self._owners.events_partitions
            if count is not None:
                partition = session_partition(session_key.encode(), count)
                if not checked:
                    checked = True
                    await self._check_written(partition, query, deadline)
            claim = self._owners.owner(partition) if partition is not None else None
            address = hint or (claim.address if claim is not None else None)
            followed, hint = hint is not None, None
            if address is not None and (remaining := deadline - time.monotonic()) > 0:
                attempts += 1
                wait = max(_MIN_WAIT_S, remaining - min(ANSWER_MARGIN_S, remaining / 5))
                asked = query.model_copy(update={"timeout_s": min(wait, MAX_READ_WAIT_S)})
                answer = await self._ask(address, session_key, kind, asked, remaining)
                if isinstance(answer, bytes):
                    return answer
                if isinstance(answer, str):
                    failure = answer
                else:
                    failure = self._refused(session_key, address, answer, query)
                    owner = answer.owner
                    if owner not in (None, address) and not followed and is_read_address(owner):
                        hint = owner
                        continue  # the refusing worker named the owner: ask it at once
            await asyncio.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
            backoff = min(2 * backoff, MAX_BACKOFF_S)
            await self._refresh(deadline)
        raise NoPartitionOwnerError(
            session_key=session_key,
            partition=partition,
            reason=f"{failure} ({counted(attempts, 'attempt')} within {query.timeout_s} s)",
        )

    async def _check_written(self, partition: int, query: ProjectionQuery, deadline: float) -> None:
        """Refuse an awaited offset the partition has not reached (its end read if needed).

        Raises:
            InvalidArgumentError: The offset is at or past the partition's end offset.
        """
        awaited = query.awaited()
        if awaited is None or awaited[1] < self._ends.get(partition, 0):
            return
        name, offset = awaited
        try:
            end = await asyncio.wait_for(
                self._end_offset(partition, offset), max(_MIN_WAIT_S, deadline - time.monotonic())
            )
        except (TimeoutError, KafkaError) as exc:
            # Unchecked, not refused: the worker waits for the offset within the read's time.
            logger.warning("end offset not read partition=%d reason=%r", partition, exc)
            return
        if offset >= end:
            raise InvalidArgumentError(
                f"{name}: no record at offset {offset} has been written to the session's "
                "partition (pass an offset that append returned)"
            )

    async def _end_offset(self, partition: int, offset: int) -> int:
        """The partition's end offset (high watermark): cached, or read past `offset`."""
        async with self._end_turn:
            if offset < (cached := self._ends.get(partition, 0)):
                return cached  # another read's refresh, while this one waited its turn
            reader = self._end_reader
            if reader is None:
                reader = AIOKafkaConsumer(
                    bootstrap_servers=self._settings.kafka_bootstrap, enable_auto_commit=False
                )
                try:
                    await reader.start()
                except BaseException:
                    await reader.stop()  # a failed or cancelled start leaves its client open
                    raise
                self._end_reader = reader
            tp = TopicPartition(self._settings.topic("events"), partition)
            end = int((await reader.end_offsets([tp]))[tp])
            self._ends[partition] = max(end, self._ends.get(partition, 0))
            return self._ends[partition]

    @staticmethod
    def _refused(
        session_key: SessionKey, address: str, refusal: ReadRefusal, query: ProjectionQuery
    ) -> str:
        """The failure of a routing refusal; raises for every other refusal.

        Reasons name no worker's address (they reach the HTTP API's callers),
        nor a partition's position; the log names the worker.
        """
        match refusal.error:
            case "not-owner":
                logger.info(
                    "read refused session=%s partition=%s worker=%s owner=%s",
                    shown(session_key),
                    refusal.partition,
                    shown(address),
                    shown(refusal.owner),
                )
                return "the worker asked no longer owns the partition"
            case "timeout":
                name, offset = query.awaited() or ("the partition", None)
                waited = name if offset is None else f"{name} {offset}"
                logger.info(
                    "read timed out session=%s worker=%s reason=%s",
                    shown(session_key),
                    shown(address),
                    shown(refusal.reason, 300),
                )
                raise ReadTimeoutError(
                    session_key=session_key,
                    reason=f"{waited} was not reached within {query.timeout_s:.3g} s "
                    "(the projector is behind)",
                )
            case "invocation-not-found":
                raise InvocationNotFoundError(
                    session_key=session_key,
                    invocation_id=(
                        query.before_invocation_id if isinstance(query, RewindQuery) else ""
                    ),
                    reason=refusal.reason,
                )
            case "session-not-found":
                raise SessionNotFoundError(session_key=session_key, reason=refusal.reason)
            case "summary-not-found":
                raise SummaryNotFoundError(
                    session_key=session_key,
                    summary_event_id=query.summary_id if isinstance(query, ExpandQuery) else "",
                    reason=refusal.reason,
                )
            case "busy":
                raise OverBudgetError(
                    refusal.retry_after_s or 1,
                    f"read of session {session_key!r}: {refusal.reason}",
                    budget="projector-reads",
                )
            case "unauthorized":
                logger.error("read credential refused worker=%s", shown(address))
                raise ContextReadError(
                    session_key=session_key,
                    reason="the projector refused this process's read credential: give every "
                    "process of the deployment the same CTXSTREAM_READ_SECRET (or "
                    "CTXSTREAM_READ_SECRET_FILE)",
                )
            case "invalid-session-key" | "invalid-parameter" | "unreadable":
                raise ContextReadError(
                    session_key=session_key,
                    reason=f"the projector refused the read ({refusal.error}): {refusal.reason}",
                )

    async def _ask(
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

    async def _refresh(self, deadline: float) -> None:
        """Read the claims committed since the last refresh, within the read's time.

        Raises:
            BrokerUnavailableError: No broker at the bootstrap address accepted a
                connection (at once: a read need not wait its time out for it).
        """
        try:
            await asyncio.wait_for(self._owners.refresh(), max(0.001, deadline - time.monotonic()))
        except KafkaConnectionError as exc:
            raise unreachable(self._settings.kafka_bootstrap) from exc
        except (TimeoutError, KafkaError) as exc:
            logger.warning("partition owners not read topic=%s reason=%r", self._owners.topic, exc)
            return
        self._directory_read = True


AnswerT = TypeVar("AnswerT")
SessionAnswerT = TypeVar("SessionAnswerT", bound=SessionAnswer)


def _session(keys: ReadKeys, settings: KafkaSettings) -> aiohttp.ClientSession:
    """The HTTP session of reads: the credential on every request, the pool's size set."""
    connector = aiohttp.TCPConnector(limit=settings.read_connections, limit_per_host=0)
    return aiohttp.ClientSession(connector=connector, headers={"Authorization": keys.authorization})


def _of_session(asked: SessionKey, named: str, answer: AnswerT) -> AnswerT:
    """`answer`, once it names the session asked for.

    Raises:
        ContextReadError: It names another session (a worker's bug, or not a worker).
    """
    if named != asked:
        logger.warning("answer refused session=%s named=%s", shown(asked), shown(named))
        raise ContextReadError(
            session_key=asked, reason="the answer names another session; it was not used"
        )
    return answer


def _context_query(
    session_key: str, renamed: Mapping[str, str], arguments: Mapping[str, object]
) -> tuple[SessionKey, ContextQuery]:
    """The session's key and the context query of `arguments` (named as `renamed` says)."""
    return _checked_key(session_key), _checked(ContextQuery, renamed, **arguments)


def _checked_key(session_key: str) -> SessionKey:
    try:
        return validate_session_key(session_key)
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"session_key: {exc}") from exc


def _checked(
    model: type[QueryT], renamed: Mapping[str, str] | None = None, **arguments: object
) -> QueryT:
    """`arguments` as a query; a refused one raises, named as the caller named it (`renamed`)."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        name = ".".join(str((renamed or {}).get(str(part), part)) for part in error["loc"])
        raise InvalidArgumentError(f"{name}: {error['msg']}") from exc
