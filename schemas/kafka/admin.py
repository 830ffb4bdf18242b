"""Topic administration both workers share: ensure, count partitions, delete.

Each call opens an admin client of its own and closes it. A missing or
refused topic is a :class:`~schemas.errors.TopicError`, never a bare
``RuntimeError`` or a count of 0. The pure halves (:func:`described_partitions`,
:func:`refused_topics`) read the broker's answers and are unit-tested alone.
Which topics a deployment has is declared in :mod:`streams.topics`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.errors import TopicError
from schemas.kafka.security import PLAINTEXT, ClientSecurity
from schemas.kafka.settings import KafkaSettings, TopicRole

logger = logging.getLogger(__name__)

#: How often :func:`partition_count` asks again while it waits for a topic.
METADATA_POLL_S: Final = 0.1
_TOPIC_ALREADY_EXISTS: Final = 36  # Kafka protocol error code


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic as the deployment wants it (`role` None: a worker's own, such as a changelog)."""

    role: TopicRole | None
    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicsCreated:
    """What :func:`ensure_topics` did."""

    created: tuple[str, ...]
    existing: tuple[str, ...]


async def ensure_topics(
    bootstrap: str, specs: Sequence[TopicSpec], *, security: ClientSecurity = PLAINTEXT
) -> TopicsCreated:
    """Create the topics of `specs` that do not exist yet; existing ones are left alone.

    Raises:
        TopicError: The broker refused a topic for another reason than that
            it exists already (the message names the topic and the error).
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security)
    await admin.start()
    try:
        present = set(await admin.list_topics())
        missing = [spec for spec in specs if spec.name not in present]
        if missing:
            response = await admin.create_topics([_new_topic(spec) for spec in missing])
            for name, code, message in refused_topics(response):
                raise TopicError(name, f"could not be created: error {code}: {message}")
    finally:
        await admin.close()
    created = tuple(spec.name for spec in missing)
    existing = tuple(spec.name for spec in specs if spec.name in present)
    logger.info("topics created=%s existing=%s", ",".join(created), ",".join(existing))
    return TopicsCreated(created, existing)


#: How long a starting worker waits for the `events` topic to appear in the metadata.
EVENTS_METADATA_WAIT_S: Final = 10.0


async def partition_count(
    bootstrap: str, topic: str, *, wait_s: float = 0.0, security: ClientSecurity = PLAINTEXT
) -> int:
    """How many partitions the broker reports for `topic`.

    A topic just created may be missing from the metadata for a moment: with
    `wait_s`, the question is asked again every :data:`METADATA_POLL_S` until
    the topic is there or `wait_s` has passed (0: asked once).

    Raises:
        TopicError: The broker named no partitions of `topic` within `wait_s`.
    """
    deadline = time.monotonic() + wait_s
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security)
    await admin.start()
    try:
        while not (count := described_partitions(await admin.describe_topics([topic]), topic)):
            if time.monotonic() >= deadline:
                raise TopicError(topic, "does not exist: run `ctxstream topics create`")
            await asyncio.sleep(METADATA_POLL_S)
    finally:
        await admin.close()
    return count


async def delete_topics_of(settings: KafkaSettings) -> None:
    """Delete every topic whose name starts with the deployment's prefix.

    The deployment's topics, and the workers' own where their app ids start
    with the prefix (the benchmarks' projectors:
    ``<prefix>-projector-sessions-changelog``).
    """
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka_bootstrap, **settings.client_security()
    )
    await admin.start()
    try:
        ours = [t for t in await admin.list_topics() if t.startswith(settings.topic_prefix)]
        if ours:
            await admin.delete_topics(ours)
    finally:
        await admin.close()


def described_partitions(described: Sequence[Mapping[str, Any]], topic: str) -> int:
    """The partitions of `topic` in a DescribeTopics answer; 0 when it names none.

    Example: ``[{"topic": "p.events", "error_code": 0, "partitions": [{...}, {...}]}]``
    counts 2 for ``p.events``; an entry with an error code (3: unknown topic) counts 0.
    """
    return sum(
        len(entry["partitions"])
        for entry in described
        if entry.get("topic") == topic and entry.get("error_code") == 0
    )


def refused_topics(response: object) -> list[tuple[str, int, str | None]]:
    """The (topic, error code, message) rows of a CreateTopics answer that are real refusals.

    A topic that exists already (error 36, a creation racing another) is not refused.
    """
    return [row for row in _topic_errors(response) if row[1] not in (0, _TOPIC_ALREADY_EXISTS)]


def _new_topic(spec: TopicSpec) -> NewTopic:
    return NewTopic(
        name=spec.name,
        num_partitions=spec.partitions,
        replication_factor=spec.replication_factor,
        topic_configs=dict(spec.config),
    )


def _topic_errors(response: object) -> list[tuple[str, int, str | None]]:
    # CreateTopics responses list (topic, error_code[, error_message]) per topic.
    rows: list[tuple[str, int, str | None]] = []
    for row in getattr(response, "topic_errors", []):
        name, code = row[0], row[1]
        message = row[2] if len(row) > 2 else None
        rows.append((str(name), int(code), message))
    return rows
