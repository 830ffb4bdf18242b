"""The deployment's API keys on its `api-keys` topic: stored, revoked, read and followed.

The keys live where the rest of the deployment's state lives, in Kafka: the
topic ``<prefix>.api-keys`` (one partition, log-compacted) holds one record per
key, keyed by its key id, valued by its :class:`~ctxstream.api.keys.ApiKeyRecord`
(the tenant and the salted hash, never the secret). Revoking a key writes its
tombstone, so compaction keeps no trace of a revoked key's hash once the
broker has dropped the tombstone too. Both writes go out on an idempotent
producer with ``acks=all``.

More in ``ctxstream/api/README.md`` (key_store.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from pydantic import ValidationError

from ctxstream.api.keys import ApiKeyRecord, decode_key_record
from schemas.codec import encode
from schemas.errors import CtxstreamError
from schemas.kafka.admin import TopicsCreated, ensure_topics
from schemas.kafka.settings import KafkaSettings
from schemas.log_text import shown
from streams.topics import topic_specs

logger = logging.getLogger(__name__)

#: The only partition of the `api-keys` topic.
KEYS_PARTITION: Final = 0
#: How long the follower's fetch waits for new records before it asks again.
_FOLLOW_MS: Final = 500


class KeyDirectoryUnavailableError(CtxstreamError):
    """The server cannot tell which keys are live right now, so it accepts none.

    Retriable: the follower is behind or the broker is away for a moment; a
    request answered 503 may be sent again.
    """

    retriable: ClassVar[bool] = True

    def __init__(self, reason: str) -> None:
        super().__init__(f"the API keys cannot be checked: {reason}")
        self.reason = reason


async def ensure_keys_topic(settings: KafkaSettings) -> TopicsCreated:
    """Create the deployment's `api-keys` topic unless it exists (deployments made before it)."""
    specs = [spec for spec in topic_specs(settings) if spec.role == "api-keys"]
    return await ensure_topics(settings.kafka_bootstrap, specs, security=settings.client_security())


async def store_key(settings: KafkaSettings, record: ApiKeyRecord) -> None:
    """Write `record` under its key id, acknowledged by every in-sync replica."""
    await _write(settings, record.key_id, encode(record))
    logger.info("api key stored key_id=%s tenant=%s", record.key_id, shown(record.tenant))


async def revoke_key(settings: KafkaSettings, key_id: str) -> None:
    """Write the tombstone of `key_id`: the key stops working wherever the topic is followed."""
    await _write(settings, key_id, None)
    logger.info("api key revoked key_id=%s", shown(key_id))


async def _write(settings: KafkaSettings, key_id: str, value: bytes | None) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap,
        acks="all",
        enable_idempotence=True,
        **settings.client_security(),
    )
    await producer.start()
    try:
        await producer.send_and_wait(
            settings.topic("api-keys"), key=key_id.encode(), value=value, partition=KEYS_PARTITION
        )
    finally:
        await producer.stop()


class KeyDirectory:
    """The live keys of the deployment, by key id, read from the `api-keys` topic.

    :meth:`catch_up` reads every record up to the topic's end as of the call;
    :meth:`follow` then keeps reading in the background until :meth:`close`.
    """

    def __init__(self, settings: KafkaSettings, *, max_staleness_s: float = 30.0) -> None:
        """A directory of the deployment `settings` name; nothing connects yet."""
        self._bootstrap = settings.kafka_bootstrap
        self._security = settings.client_security()
        self._tp = TopicPartition(settings.topic("api-keys"), KEYS_PARTITION)
        self._max_staleness_s = max_staleness_s
        self._consumer: AIOKafkaConsumer | None = None
        self._records: dict[str, ApiKeyRecord] = {}
        self._follower: asyncio.Task[None] | None = None

    @property
    def records(self) -> Mapping[str, ApiKeyRecord]:
        """Every live key read so far, by key id."""
        return self._records

    def record(self, key_id: str) -> ApiKeyRecord | None:
        """The live record of `key_id` (None: no such key, or revoked).

        Raises:
            KeyDirectoryUnavailableError: The follower stopped, or has not heard
                from the broker for ``max_staleness_s``: a revocation may be unseen.
        """
        problem = self.problem()
        if problem is not None:
            raise KeyDirectoryUnavailableError(problem)
        return self._records.get(key_id)

    def problem(self) -> str | None:
        """Why the live keys cannot be known now (None: they can); no I/O."""
        follower, consumer = self._follower, self._consumer
        if follower is None or consumer is None:
            return "the directory is not following the topic"
        if follower.done():
            return "the topic's reader stopped"
        polled_ms = consumer.last_poll_timestamp(self._tp)
        if polled_ms is not None:
            silent_s = time.time() - polled_ms / 1000
            if silent_s > self._max_staleness_s:
                return f"no answer from the broker for {silent_s:.0f} s"
        return None

    async def catch_up(self) -> None:
        """Read every record committed up to the topic's end as of now."""
        consumer = await self._started()
        end = (await consumer.end_offsets([self._tp]))[self._tp]
        while await consumer.position(self._tp) < end:
            self._take(await consumer.getmany(self._tp, timeout_ms=_FOLLOW_MS))

    def follow(self) -> None:
        """Keep reading the topic in the background (after :meth:`catch_up`)."""
        if self._follower is None:
            self._follower = asyncio.create_task(self._follow(), name="api-keys-follower")

    async def close(self) -> None:
        """Stop following and close the reader."""
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()

    async def _follow(self) -> None:
        consumer = await self._started()
        try:
            while True:
                self._take(await consumer.getmany(self._tp, timeout_ms=_FOLLOW_MS))
        except Exception:
            # The task ends: record() refuses every key from now on (fail closed).
            logger.exception("api keys no longer followed topic=%s", self._tp.topic)

    def _take(self, fetched: Mapping[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        for record in fetched.get(self._tp, []):
            self._note(record.key, record.value)

    def _note(self, key: bytes | None, value: bytes | None) -> None:
        """Take one record in: a key's record, or its tombstone (revoked)."""
        if key is None:
            return
        key_id = key.decode(errors="replace")
        if value is None:
            if self._records.pop(key_id, None) is not None:
                logger.info("api key no longer live key_id=%s", shown(key_id))
            return
        try:
            record = decode_key_record(value)
        except ValidationError as exc:
            # Another writer's record, or a newer schema: a key it names does not work here.
            logger.warning("api key skipped key_id=%s reason=%s", shown(key_id), shown(str(exc)))
            self._records.pop(key_id, None)
            return
        if record.key_id != key_id:
            logger.warning("api key skipped key_id=%s: its record names another", shown(key_id))
            self._records.pop(key_id, None)
            return
        self._records[key_id] = record

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self._bootstrap,
                **self._security,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            await consumer.start()
            consumer.assign([self._tp])
            await consumer.seek_to_beginning(self._tp)
            self._consumer = consumer
        return self._consumer
