"""``ctxstream sink``: `events` read ``read_committed`` into the target schema, exactly once.

:class:`Sink` checks the schema's version, joins the schema's consumer group, seeks each
assigned partition to its stored next offset, then per fetch: dead letters sent, rows and
offsets written in one fenced transaction (:mod:`streams.sink.fence`); a fenced batch seeks
back to the stored offsets. Design: ``streams/sink/README.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition

from schemas.codec import encode
from schemas.dead_letter import DeadLetter
from schemas.errors import CtxstreamError
from schemas.heap.heap_policy import HeapPolicy, log_gc
from schemas.kafka.admin import EVENTS_METADATA_WAIT_S, partition_count
from schemas.masked_dsn import masked_dsn
from streams.embeddings.embedder import Embedder
from streams.embeddings.settings import EmbeddingSettings
from streams.sink.database import Connection, connect
from streams.sink.errors import FenceError, TargetSchemaError
from streams.sink.fence import Batch, other_topics, stored_offsets, write_batch
from streams.sink.fetch import Fetched, fetch_batch
from streams.sink.migrate import check_schema
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.live_views import LiveViews, configured_overlaps
from streams.sink.read_model.memory_embeddings import EmbeddingPass
from streams.sink.read_model.status_step import StatusStep
from streams.sink.settings import SinkSettings
from streams.sink.target_schema import group_id

logger = logging.getLogger(__name__)

#: The exit status after a failure of the sink's own (a supervisor restarts it).
FAILED = 1


class SeekToStored(ConsumerRebalanceListener):  # type: ignore[misc]
    """On assignment, seek each partition to the next offset the database stores for it.

    :attr:`next_offsets` is where the next batch of each owned partition must start: set
    here from the database, moved by the sink after each batch it commits or is fenced on.
    """

    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        conn: Connection,
        schema: str,
        topic: str,
        cache: HistoryCache | None = None,
    ) -> None:
        self._consumer = consumer
        self._cache = cache
        self._conn = conn
        self._schema = schema
        self._topic = topic
        self.next_offsets: dict[TopicPartition, int] = {}

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        """Forget the revoked partitions and their sessions' cached states.

        Another sink may write them next; offsets are committed with each batch's rows.
        """
        revoked = list(revoked)
        for tp in revoked:
            self.next_offsets.pop(tp, None)
        if self._cache is not None:
            self._cache.drop_partitions(tp.partition for tp in revoked if tp.topic == self._topic)

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        """Seek each assigned partition to its stored next offset (0 when none is stored)."""
        mine = [tp for tp in assigned if tp.topic == self._topic]
        stored = await stored_offsets(
            self._conn, self._schema, self._topic, (tp.partition for tp in mine)
        )
        for tp in mine:
            self.next_offsets[tp] = stored[tp.partition]
            self._consumer.seek(tp, stored[tp.partition])
        logger.info("sink assigned %s", {p: stored[p] for p in sorted(stored)})


class Sink:
    """One sink instance of one target schema; :meth:`run` until a stop event."""

    def __init__(
        self,
        settings: SinkSettings,
        embedder: Embedder | None = None,
        heap: HeapPolicy | None = None,
    ) -> None:
        """A sink of `settings`' `events` topic into `settings.sink_schema`.

        With `embedder`, memories get embeddings after each batch (``EmbeddingPass``);
        with `heap`, the process's collections are settled after each batch.
        """
        self._settings = settings
        self._schema = settings.sink_schema
        self._topic = settings.topic("events")
        self._dead_letters = settings.topic("dead-letters")
        self._cache = HistoryCache(settings.sink_cache_sessions)
        self._memory_apps = MemoryApps.parse(settings.memory_apps)
        self._live = LiveViews(configured_overlaps(), settings.sink_cache_sessions)
        self._partitions = settings.events_partitions  # the broker's, once running
        self._embedding = EmbeddingPass(embedder) if embedder is not None else None
        self._heap = heap

    async def run(self, stop: asyncio.Event) -> None:
        """Check the schema, then sink batches until `stop` is set.

        Raises:
            SchemaVersionError: the schema is older or newer than the code.
            TargetSchemaError: the schema holds another topic's rows.
            DatabaseError: PostgreSQL cannot be reached.
        """
        settings = self._settings
        dsn = settings.postgres_dsn.get_secret_value()
        conn = await connect(dsn)
        seek_conn = await connect(dsn)
        try:
            await check_schema(conn, self._schema)
            if others := await other_topics(conn, self._schema, self._topic):
                raise TargetSchemaError(
                    f"schema {self._schema!r} holds the read model of {', '.join(others)}, "
                    f"not {self._topic}: use another schema"
                )
            logger.info(
                "sink starting schema=%s topic=%s group=%s database=%s",
                self._schema,
                self._topic,
                group_id(settings.topic_prefix, self._schema),
                masked_dsn(dsn),
            )
            # Records are checked against the broker's count, as the projector checks them.
            self._partitions = await partition_count(
                settings.kafka_bootstrap,
                self._topic,
                wait_s=EVENTS_METADATA_WAIT_S,
                security=settings.client_security(),
            )
            await self._consume(conn, seek_conn, stop)
        finally:
            await seek_conn.close()
            await conn.close()

    async def _consume(self, conn: Connection, seek_conn: Connection, stop: asyncio.Event) -> None:
        settings = self._settings
        consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            **settings.client_security(),
            group_id=group_id(settings.topic_prefix, self._schema),
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=settings.sink_session_timeout_ms,
            heartbeat_interval_ms=max(100, settings.sink_session_timeout_ms // 3),
        )
        producer = AIOKafkaProducer(
            bootstrap_servers=settings.kafka_bootstrap,
            acks="all",
            enable_idempotence=True,
            **settings.client_security(),
        )
        await producer.start()
        try:
            await consumer.start()
            try:
                listener = SeekToStored(consumer, seek_conn, self._schema, self._topic, self._cache)
                consumer.subscribe([self._topic], listener=listener)
                await self._loop(consumer, producer, conn, listener.next_offsets, stop)
            finally:
                await consumer.stop()
        finally:
            await producer.stop()

    async def _loop(
        self,
        consumer: AIOKafkaConsumer,
        producer: AIOKafkaProducer,
        conn: Connection,
        next_offsets: dict[TopicPartition, int],
        stop: asyncio.Event,
    ) -> None:
        """Write batch after batch, fetching and decoding the next while one is written.

        The next fetch starts where the batch being written ends; it is written only if the
        batch before it committed there (else it is dropped and fetched again from where the
        partitions' next batch must start: after a fence, a rebalance).
        """
        ahead: asyncio.Task[Fetched | None] | None = None
        try:
            while not stop.is_set():
                fetched = await (ahead or self._fetch(consumer, next_offsets))
                ahead = None
                if fetched is None:  # not assigned yet (the group is joining)
                    await asyncio.sleep(self._settings.sink_fetch_wait_ms / 1000)
                    continue
                if not fetched.starts_at(next_offsets):
                    continue  # fetched before a fence or a rebalance moved the positions
                after = {**next_offsets}
                after.update((TopicPartition(self._topic, p), e) for p, e in fetched.ends.items())
                ahead = asyncio.create_task(self._fetch(consumer, after))
                await self._write(producer, conn, fetched, next_offsets)
        finally:
            if ahead is not None:
                ahead.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ahead

    async def _fetch(
        self, consumer: AIOKafkaConsumer, expected: dict[TopicPartition, int]
    ) -> Fetched | None:
        settings = self._settings
        return await fetch_batch(
            consumer,
            expected,
            self._partitions,
            wait_ms=settings.sink_fetch_wait_ms,
            max_records=settings.sink_batch_records,
        )

    async def _write(
        self,
        producer: AIOKafkaProducer,
        conn: Connection,
        fetched: Fetched,
        next_offsets: dict[TopicPartition, int],
    ) -> None:
        """One fetch: its dead letters sent, then its rows and positions in one transaction.

        The fence checks the fetch's starts against the database; where each partition's
        next batch must start moves to the ends after a commit, to the stored offsets after
        a fence.
        """
        planned = fetched.planned
        batch = Batch(self._topic, fetched.starts, fetched.ends, planned.rows)
        step = StatusStep(self._cache, planned.rows, planned.events, self._memory_apps, self._live)
        try:
            batch.check()
            await self._send_letters(producer, planned.letters)
            await write_batch(conn, self._schema, batch, step)
        except FenceError as exc:
            logger.warning("%s; seeking to the stored offsets", exc)
            self._cache.drop_partitions(fetched.starts)  # another sink wrote them: stale states
            moved = exc.stored
        except BaseException:
            self._cache.clear()  # the commit's outcome is unknown: no state is trusted
            raise
        else:
            step.committed()
            if self._heap is not None:
                self._heap.settle()
            moved = fetched.ends
            if self._embedding is not None:
                await self._embedding.run(conn, self._schema)
        for partition, offset in moved.items():
            tp = TopicPartition(self._topic, partition)
            if tp in next_offsets:
                next_offsets[tp] = offset

    async def _send_letters(self, producer: AIOKafkaProducer, letters: list[DeadLetter]) -> None:
        """Send `letters` and wait until the broker has each (before the batch commits)."""
        sent = [
            await producer.send(self._dead_letters, key=letter.record_key(), value=encode(letter))
            for letter in letters
        ]
        await asyncio.gather(*sent)
        for letter in letters:
            logger.warning(
                "sink dead-lettered %s:%d:%d: %s",
                letter.source_topic,
                letter.source_partition,
                letter.source_offset,
                letter.reason,
            )


async def _serve(settings: SinkSettings, heap: HeapPolicy) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await Sink(settings, EmbeddingSettings().embedder(), heap).run(stop)


def sink_heap(settings: SinkSettings) -> HeapPolicy:
    """The sink process's collections: off, whole ones after batches (README, "Memory")."""
    if settings.sink_gc_period_s is None:
        return HeapPolicy("automatic", settings.sink_gc_threshold, 60.0)
    return HeapPolicy("off", settings.sink_gc_threshold, settings.sink_gc_period_s)


def run_sink(settings: SinkSettings) -> int:
    """Run the sink until SIGTERM or SIGINT: 0 then; :data:`FAILED` after a failure.

    Raises:
        CtxstreamError: the sink refused to run (the schema's version, a schema holding
            another topic, PostgreSQL unreachable); the message says which.
    """
    heap = sink_heap(settings)
    heap.start()
    try:
        asyncio.run(_serve(settings, heap))
    except CtxstreamError:
        raise  # refused before sinking anything: its message is all the sink says
    except Exception:
        log_gc(heap)
        logger.exception("sink failed; exiting with status %d", FAILED)
        return FAILED
    log_gc(heap)
    return 0
