"""Who may do what on a secure broker: one principal per process, its ACLs (pure).

``deploy/kafka/start --secure`` gives each process of a deployment its own SCRAM
principal and grants it exactly what its code uses, from :func:`grants`; the
deployment's README table says the same in words, and
``tests/integration/deploy/test_kafka_secure.py`` tries every other produce,
fetch, transaction and group join and expects the broker's refusal.

Names follow the deployment: topics are ``<prefix>.<role>``; the projector's group,
transactional ids (``<app_id>-<topic>-<partition>``, :mod:`schemas.kafka.transaction`)
and changelog (``<app_id>-sessions-changelog``) follow its app id; the summarizer's
follow its group id; the sink's groups are ``<prefix>-sink-<schema>``.

Read, Write and Create on a topic imply Describe (Kafka's own rule), and Write on a
topic implies idempotent writes (Kafka 3.0+), so neither is listed. The broker's own
principal and ``admin`` (the operators' tools: ``ctxstream topics``, ``api keys``,
Kafka's command-line tools) are super users and need no ACL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Resource = Literal["topic", "group", "transactional-id"]
Pattern = Literal["literal", "prefixed"]
Operation = Literal["read", "write", "create"]
Principal = Literal["projector", "summarizer", "sink", "http-api"]

#: The processes with ACLs of their own, in the order the table lists them.
PRINCIPALS: Final[tuple[Principal, ...]] = ("projector", "summarizer", "sink", "http-api")
#: The broker's own principal (controller and inter-broker): a super user.
BROKER_PRINCIPAL: Final = "broker"
#: The operators' tools: a super user (topics, keys, ACLs, Kafka's own tools).
ADMIN_PRINCIPAL: Final = "admin"
#: Every SCRAM user a secure data folder has a password for.
USERS: Final[tuple[str, ...]] = (BROKER_PRINCIPAL, ADMIN_PRINCIPAL, *PRINCIPALS)


@dataclass(frozen=True, slots=True)
class Grant:
    """One ALLOW rule: `operation` on the resources `name` names by `pattern`."""

    resource: Resource
    name: str
    pattern: Pattern
    operation: Operation


@dataclass(frozen=True, slots=True)
class DeploymentNames:
    """The names a deployment's ACLs are written for (each process's settings say them)."""

    topic_prefix: str = "ctxstream"
    projector_app_id: str = "ctxstream-projector"
    summarizer_group_id: str = "ctxstream-summarizer"

    def topic(self, role: str) -> str:
        """``<prefix>.<role>``, as :meth:`schemas.kafka.settings.KafkaSettings.topic`."""
        return f"{self.topic_prefix}.{role}"

    @property
    def changelog(self) -> str:
        """The native projector's state changelog: ``<app_id>-sessions-changelog``."""
        return f"{self.projector_app_id}-sessions-changelog"

    @property
    def sink_group_prefix(self) -> str:
        """Every sink's group starts with it: ``<prefix>-sink-`` then the target schema."""
        return f"{self.topic_prefix}-sink-"


def _topic(name: str, *operations: Operation) -> list[Grant]:
    return [Grant("topic", name, "literal", op) for op in operations]


def grants(names: DeploymentNames) -> dict[Principal, tuple[Grant, ...]]:
    """Every principal's ALLOW rules; nothing else is allowed to it.

    - projector: folds `events` (its group, read_committed), writes snapshots,
      dead letters, compaction requests and its partition claims in one
      transaction per partition (transactional ids ``<app_id>-``), keeps its
      changelog, reads the claims for its read endpoints, and creates its
      changelog and the claims topic when missing (the engine ensures both).
    - summarizer: consumes `compaction-requests` (its group), reads session slices
      of `events`, writes summaries to `events` and letters to `dead-letters`
      in transactions ``<group_id>-``.
    - sink: consumes `events` (groups ``<prefix>-sink-``), writes `dead-letters`
      (idempotent, not transactional).
    - http-api: appends to `events` (idempotent), reads `events` (ends, slices),
      `projections` (subscriptions, bounds), `partition-owners` (routing) and
      `api-keys` (the key directory; only ``admin`` writes keys); creates
      `api-keys` when missing (the server ensures it). No group: its readers
      assign partitions themselves.
    """
    events, requests = names.topic("events"), names.topic("compaction-requests")
    snapshots, letters = names.topic("projections"), names.topic("dead-letters")
    owners, keys = names.topic("partition-owners"), names.topic("api-keys")
    projector = [
        *_topic(events, "read"),
        *_topic(snapshots, "write"),
        *_topic(letters, "write"),
        *_topic(requests, "write"),
        *_topic(owners, "read", "write", "create"),
        *_topic(names.changelog, "read", "write", "create"),
        Grant("group", names.projector_app_id, "literal", "read"),
        Grant("transactional-id", f"{names.projector_app_id}-", "prefixed", "write"),
    ]
    summarizer = [
        *_topic(requests, "read"),
        *_topic(events, "read", "write"),
        *_topic(letters, "write"),
        Grant("group", names.summarizer_group_id, "literal", "read"),
        Grant("transactional-id", f"{names.summarizer_group_id}-", "prefixed", "write"),
    ]
    sink = [
        *_topic(events, "read"),
        *_topic(letters, "write"),
        Grant("group", names.sink_group_prefix, "prefixed", "read"),
    ]
    http_api = [
        *_topic(events, "read", "write"),
        *_topic(snapshots, "read"),
        *_topic(owners, "read"),
        *_topic(keys, "read", "create"),
    ]
    return {
        "projector": tuple(projector),
        "summarizer": tuple(summarizer),
        "sink": tuple(sink),
        "http-api": tuple(http_api),
    }
