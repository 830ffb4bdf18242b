"""The client agents append their sessions' events with, and read their contexts back. Async.

Each event is checked before anything is sent, by the decoder the projector runs
(:mod:`ctxstream.appends.event_records`); a refused one raises
:class:`~ctxstream.errors.InvalidEventError` naming the field. Records go out on an
idempotent producer with ``acks=all``, keyed by the session (so a session's events keep
their order); :meth:`Client.append` returns the offset once every in-sync replica has
it, and an event the session stored already, equal, answers with the stored offset
(:mod:`ctxstream.appends.results`). Reads go to the worker that owns the session
(:mod:`ctxstream.reads`); :meth:`Client.subscribe` and :meth:`Client.replay` follow
and rebuild projections. :class:`ctxstream.sync_client.SyncClient` blocks instead.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Literal, Self

from ctxstream.appends.deletion_record import deletion_record
from ctxstream.appends.event_records import EventInput
from ctxstream.appends.fork_record import checked_fork, fork_record
from ctxstream.appends.memory_record import fresh_memory_record
from ctxstream.appends.results import AppendResult
from ctxstream.appends.rewind_record import checked_invocation_id, rewind_record
from ctxstream.appends.writer import EventWriter
from ctxstream.errors import InvalidArgumentError
from ctxstream.reads import ContextReads
from ctxstream.replay import OnProgress, ReplayReport, replay, replay_settings
from ctxstream.replay_request import replay_request
from ctxstream.subscription import CONNECT_TIMEOUT_S, Subscribed, subscription
from ctxstream.subscription_request import OffsetArgument, TimeArgument, subscription_request
from schemas.event import Content
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.read_protocol import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_READ_WAIT_S,
    ExpandedPage,
    HistoryStart,
)
from streams.projector_settings import ProjectorSettings


class Client:
    """Appends events to the deployment's `events` topic and follows its projections. Async.

    Constructed from the ``CTXSTREAM_*`` settings (:class:`schemas.kafka.settings.KafkaSettings`)
    or the arguments, which win. Use it as an async context manager, or call :meth:`start`
    and :meth:`stop` (its one producer). Each subscription has a reader of its own.
    """

    def __init__(
        self,
        *,
        bootstrap: str | None = None,
        topic_prefix: str | None = None,
        producer_id: str | None = None,
        settings: KafkaSettings | None = None,
    ) -> None:
        """A client of the cluster and deployment the settings (or the arguments) name."""
        base = settings if settings is not None else KafkaSettings()
        overrides = {
            name: value
            for name, value in (("kafka_bootstrap", bootstrap), ("topic_prefix", topic_prefix))
            if value is not None
        }
        self._settings = base.model_copy(update=overrides) if overrides else base
        self._reads = ContextReads(self._settings)
        producer_id = producer_id or f"ctxstream-client-{uuid.uuid4().hex[:12]}"
        self._writer = EventWriter(self._settings, self._reads, producer_id)

    @property
    def events_topic(self) -> str:
        """The topic the client appends to."""
        return self._writer.topic

    async def start(self) -> None:
        """Connect the producer.

        Raises:
            BrokerUnavailableError: No broker at the bootstrap address accepted a connection.
        """
        await self._writer.start()

    async def stop(self) -> None:
        """Send what is buffered and close the producer (and what reads opened)."""
        try:
            await self._writer.stop()
        finally:
            await self._reads.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def append(self, session_key: str, event: EventInput) -> Offset:
        """Append one event; its offset once every in-sync replica has it.

        An event the session has stored already (same id, every field equal)
        is not written again: its offset is the stored one's
        (:meth:`append_result` says whether it was a duplicate).

        Raises:
            InvalidEventError: The event or key is refused (nothing was sent).
            RuntimeError: The client is not started.
        """
        return (await self.append_result(session_key, event)).offset

    async def append_result(self, session_key: str, event: EventInput) -> AppendResult:
        """Append one event; its offset and whether it was a duplicate (:meth:`append_results`)."""
        return (await self.append_results(session_key, [event]))[0]

    async def append_many(self, session_key: str, events: Sequence[EventInput]) -> list[Offset]:
        """Append events of one session, in order; their offsets (:meth:`append_results`)."""
        return [result.offset for result in await self.append_results(session_key, events)]

    async def append_results(
        self, session_key: str, events: Sequence[EventInput]
    ) -> list[AppendResult]:
        """Append events of one session, in order; each one's offset and whether it was a duplicate.

        Every event is checked before any is sent, on a thread of its own (the
        event loop goes on meanwhile): one refused event sends none. The
        pipeline's own bookkeeping records (author ``ctxstream``, fork
        records) are refused: :meth:`fork` appends those.

        Then the session's owner is asked which of the events whose id the
        caller gave it has stored already, equal (``duplicate_lookup_timeout_s``;
        :mod:`ctxstream.appends.results`): those are not written, and answer
        with the stored offset and ``duplicate`` true. With no owner to ask in
        that time, every event is written, and the fold drops copies; so does
        a copy sent before the first one was folded.

        Raises:
            InvalidEventError: An event or the key is refused; the message names its index.
            RuntimeError: The client is not started.
        """
        return await self._writer.write(session_key, events, pipeline=False)

    async def rewind(
        self,
        session_key: str,
        before_invocation_id: str,
        *,
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> Offset:
        """Annul invocation `before_invocation_id` and what follows it; the rewind's offset.

        As ADK's ``Runner.rewind_async`` (reference §10): the worker that owns
        the session replays the state deltas of its stored events before the
        invocation's first one and says which of the session's own keys must
        change back; then this appends ADK's rewind event carrying that
        ``state_delta`` (:mod:`ctxstream.appends.rewind_record`: author ``user``, a
        fresh id, invocation id ``e-<uuid>`` and this client's clock). The
        session's context drops the invocation's events once the projector
        folds it (pass the offset as ``min_offset`` to read it). With
        `min_offset` (an offset this session's append returned) the owner
        answers once it has folded that offset, so the rewind sees the
        invocations appended up to it.

        Raises:
            InvalidArgumentError: `before_invocation_id` is empty or too long, or the
                key is refused (nothing was sent).
            InvocationNotFoundError: The session has no stored event of that
                invocation (nothing was appended).
            ReadTimeoutError, NoPartitionOwnerError: The owner could not be asked.
            RuntimeError: The client is not started.
        """
        checked_invocation_id(before_invocation_id)  # before anything is asked
        state_delta = await self._reads.rewind_delta(
            session_key, before_invocation_id, min_offset=min_offset, timeout_s=timeout_s
        )
        event = rewind_record(
            before_invocation_id,
            event_id=uuid.uuid4().hex,
            invocation_id=f"e-{uuid.uuid4()}",
            timestamp=time.time(),
            state_delta=state_delta,
        )
        # A fresh id: no stored copy to look up.
        results = await self._writer.write(session_key, [event], pipeline=False, lookup=False)
        return results[0].offset

    async def fork(
        self,
        session_key: str,
        at_offset: int,
        new_session_key: str,
        *,
        timeout_s: float = DEFAULT_READ_WAIT_S,
        on_source: Callable[[HistoryStart], None] | None = None,
    ) -> Offset:
        """Start `new_session_key` as a fork of `session_key` up to `at_offset`; the fork's offset.

        The new session's history is the source's records at offsets up to
        `at_offset` (an offset :meth:`append` returned for the source), then
        its own: one fork record names the source (:mod:`projections.fold.fork`),
        nothing is copied. Its context, state, counters and compaction go on
        from the source's as they were at `at_offset`; the two diverge after.
        Before appending, the source's owner is asked to have folded
        `at_offset` (so the offset is the source's, committed) and where the
        source's history starts on its partition (the fork record names it,
        so the fork's worker reads the source from there), and the new
        session's owner to show it has no records yet. `on_source`, when given,
        is called with where the source lies on its partition before anything
        is appended (the HTTP API charges a fork's reading there); what it
        raises ends the fork.

        Raises:
            InvalidArgumentError: A key is refused, the keys are of two tenants
                or the same, `at_offset` is not an offset, the source has no
                record up to `at_offset`, or the new session has records
                already (nothing was appended).
            ReadTimeoutError, NoPartitionOwnerError: An owner could not be asked.
            RuntimeError: The client is not started.
        """
        checked_fork(session_key, at_offset, new_session_key)  # refused before anything is sent
        source = await self._reads.history_start(
            session_key, min_offset=at_offset, timeout_s=timeout_s
        )
        if source.last_offset == -1:
            raise InvalidArgumentError(f"session_key: {session_key!r} has no records to fork")
        if on_source is not None:
            on_source(source)  # where the source lies: what the fork will read (may refuse)
        target = await self._reads.history_start(
            new_session_key, min_offset=None, timeout_s=timeout_s
        )
        if target.last_offset != -1:
            raise InvalidArgumentError(
                f"new_session_key: {new_session_key!r} has records already "
                f"(up to offset {target.last_offset}); a fork starts a new session"
            )
        event = fork_record(
            session_key,
            at_offset,
            new_session_key,
            first_offset=None if source.first_offset == -1 else source.first_offset,
            event_id=uuid.uuid4().hex,
            timestamp=time.time(),
        )
        return (await self._writer.write(new_session_key, [event], pipeline=True))[0].offset

    async def delete_session(self, session_key: str) -> Offset:
        """Append the session's deletion record (even if it has no records); its offset.

        Reads then answer ``session-not-found`` (``min_offset``: that offset) until
        an append starts it afresh (:mod:`ctxstream.appends.deletion_record`).

        Raises:
            InvalidArgumentError: The key is refused (nothing was sent).
        """
        event = deletion_record(session_key, event_id=uuid.uuid4().hex, timestamp=time.time())
        return (await self._writer.write(session_key, [event], pipeline=True))[0].offset

    async def mark_memory(self, session_key: str, action: str, ids: object = None) -> Offset:
        """Append a memory record (``add``/``delete``, all or `ids`); its offset (memory_record)."""
        event = fresh_memory_record(session_key, action, ids)
        return (await self._writer.write(session_key, [event], pipeline=True))[0].offset

    async def context(
        self,
        session_key: str,
        *,
        agent: str | None = None,
        branch: str | None = None,
        include_contents: Literal["default", "none"] = "default",
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> list[Content]:
        """The contents a model request of the session would carry, as the core assembles them.

        Answered by the projector that owns the session's partition, from its
        memory (:mod:`ctxstream.reads`). `agent` None: the agent ADK's
        router would run next (the last to reply, else the app's root agent);
        `branch`: the invocation branch;
        `include_contents` ``none``: the current turn only. With `min_offset`
        (an offset :meth:`append` returned for this session) the answer
        includes that record: read-your-writes. `timeout_s` bounds the call.

        Raises:
            InvalidArgumentError: An argument is refused (nothing was sent), naming it.
            ReadTimeoutError: The projector had not folded `min_offset` in time.
            NoPartitionOwnerError: No projector served the session's partition in time.
            ContextReadError: The projector could not answer (a quarantined session).
        """
        return await self._reads.context(
            session_key,
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )

    async def projection(
        self,
        session_key: str,
        min_offset: int | None = None,
        *,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> ProjectionSnapshot:
        """The session's current projection snapshot, from the projector that owns it.

        `min_offset` and `timeout_s` as for :meth:`context`, which raises the same errors.
        """
        return await self._reads.projection(session_key, min_offset=min_offset, timeout_s=timeout_s)

    async def context_as_of(
        self,
        session_key: str,
        offset: int,
        *,
        agent: str | None = None,
        branch: str | None = None,
        include_contents: Literal["default", "none"] = "default",
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> list[Content]:
        """The contents the session had right after the record at `offset` (time travel).

        `offset` is any offset of the session's partition: the answer is the
        core's fold of the session's records at offsets up to it, read for
        `agent`, `branch` and `include_contents` as :meth:`context` reads.
        The projector waits until it has folded `offset`, within `timeout_s`.

        Raises:
            ReadTimeoutError: The projector had not folded `offset` in time.
            CtxstreamError: As :meth:`context` raises it (a refused argument names `offset`).
        """
        return await self._reads.context_as_of(
            session_key,
            offset,
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            timeout_s=timeout_s,
        )

    async def context_json(
        self,
        session_key: str,
        *,
        agent: str | None = None,
        branch: str | None = None,
        include_contents: Literal["default", "none"] = "default",
        min_offset: int | None = None,
        as_of: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> bytes:
        """:meth:`context` (or, with `as_of`, :meth:`context_as_of`) as JSON bytes.

        ``{"contents": [...]}``, each content in genai's JSON, as the HTTP API
        answers: forwarded from the projector's answer without building a model
        of each content, so a long context costs its caller milliseconds.
        `min_offset` and `as_of` are not given together. Raises as they do.
        """
        return await self._reads.contents_json(
            session_key,
            {},
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            min_offset=min_offset,
            as_of=as_of,
            timeout_s=timeout_s,
        )

    async def expand(
        self,
        session_key: str,
        summary_event_id: str,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str | None = None,
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> ExpandedPage:
        """A page of the original events the summary `summary_event_id` covers.

        The session's live raw events (rewinds applied) whose timestamps lie
        in the summary's range, as masking hides them, in stream order; at
        most `page_size` a page. Pass the page's ``next_page_token`` as
        `page_token` for the next one (None: it was the last).
        `min_offset` and `timeout_s` as for :meth:`context`.

        Raises:
            SummaryNotFoundError: No live event of the session has that id, or it is no summary.
            CtxstreamError: As :meth:`context` raises it.
        """
        return await self._reads.expand(
            session_key,
            summary_event_id,
            page_size=page_size,
            page_token=page_token,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )

    def subscribe(
        self,
        tenant: str,
        *,
        sessions: Iterable[str] | None = None,
        from_offset: OffsetArgument = None,
        from_time: TimeArgument = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> AsyncGenerator[Subscribed, None]:
        """The projection snapshots of `tenant` (of `sessions` only, when given), as committed.

        Each item carries its snapshot, partition and offset; save
        ``{item.partition: item.next_offset}`` to resume with
        ``from_offset=<saved>``. `from_offset`: None (the default) yields only
        snapshots committed from now on, an int that offset of every partition
        (``0``: from the beginning), a mapping the next offset of each
        partition (others from their beginning). `from_time` (an aware
        datetime or epoch seconds; not with `from_offset`): the first snapshot
        of each partition written at or after it. A record that cannot be
        decoded is logged and skipped; the iteration goes on. It does not
        need :meth:`start`; close it with ``contextlib.aclosing`` or by
        ending the ``async for``. See :mod:`ctxstream.subscription`.

        Example::

            async with contextlib.aclosing(client.subscribe("acme", from_offset=0)) as items:
                async for item in items:
                    positions[item.partition] = item.next_offset

        Raises:
            InvalidArgumentError: An argument is refused (at the call), naming it.
            BrokerUnavailableError: The broker refused or did not answer within
                `connect_timeout_s` (at the first iteration).
            TopicMissingError: The deployment has no `projections` topic (at the
                first iteration).
        """
        request = subscription_request(
            tenant, sessions=sessions, from_offset=from_offset, from_time=from_time
        )
        return subscription(self._settings, request, connect_timeout_s=connect_timeout_s)

    async def replay(
        self,
        target_prefix: str,
        *,
        from_offset: OffsetArgument = None,
        from_time: TimeArgument = None,
        sessions: Iterable[str] | None = None,
        progress: OnProgress | None = None,
        projector_settings: ProjectorSettings | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> ReplayReport:
        """Rebuild projections from the deployment's `events` into the namespace `target_prefix`.

        Folds the log with the projector's own batch step and writes the
        snapshots to ``<target_prefix>.projections`` (compaction requests and
        dead letters to the target's topics too, made when missing), leaving
        every live topic, offset and group as it was: see :mod:`ctxstream.replay`.
        Reads up to the end of the log as it is when the replay starts.

        `from_offset`: an offset of every partition, or a mapping of partition
        to offset (others from their beginning); neither it nor `from_time`:
        from the beginning. `from_time` (an aware datetime or epoch seconds):
        from the first record of each partition written at or after it. From
        a later offset a session is folded from the records the replay reads,
        as if its log began there. `sessions`: only these session keys (of
        any tenant). `progress` is called with a :class:`ReplayProgress`
        when the replay starts, after each batch and at the end.
        `projector_settings`: the compaction configs and view agents to fold
        with (default: the projector's, from the same ``CTXSTREAM_*``
        variables, on this client's cluster and deployment). It does not
        need :meth:`start`.

        Example::

            report = await client.replay("rebuilt", progress=lambda p: print(p.done, p.total))

        Raises:
            InvalidArgumentError: An argument is refused (the target is the live
                prefix, a session key is bad), naming it; nothing was read.
            BrokerUnavailableError: The broker refused or did not answer within
                `connect_timeout_s`.
            TopicMissingError: The deployment has no `events` topic.
            TopicCreationError: The broker refused to create a target topic.
        """
        request = replay_request(
            target_prefix,
            live_prefix=self._settings.topic_prefix,
            sessions=sessions,
            from_offset=from_offset,
            from_time=from_time,
        )
        settings = replay_settings(self._settings, projector_settings)
        return await replay(
            settings, request, progress=progress, connect_timeout_s=connect_timeout_s
        )
