"""Where the cluster is and what the deployment's topics are called, for every process.

The projector's engines, the summarizer and the tools all read these; this is
their one definition.

Every option is an environment variable with the ``CTXSTREAM_`` prefix, e.g.
``CTXSTREAM_KAFKA_BOOTSTRAP=127.0.0.1:9092``; each process's settings extend
:class:`KafkaSettings`.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

TopicRole = Literal[
    "events", "compaction-requests", "projections", "dead-letters", "partition-owners", "api-keys"
]
"""What a topic of the deployment is for."""
TOPIC_ROLES: Final[tuple[TopicRole, ...]] = (
    "events",
    "compaction-requests",
    "projections",
    "dead-letters",
    "partition-owners",
    "api-keys",
)
#: What a deployment's topic prefix may be: its topics' names are ``<prefix>.<role>``.
TOPIC_PREFIX_PATTERN: Final = r"^[A-Za-z0-9._-]{1,100}$"


class KafkaSettings(BaseSettings):
    """The cluster and the deployment's topics."""

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    kafka_bootstrap: str = "127.0.0.1:9092"
    topic_prefix: str = Field(default="ctxstream", pattern=TOPIC_PREFIX_PATTERN)
    events_partitions: int = Field(default=12, ge=1, le=10_000)
    partitions: int = Field(default=6, ge=1, le=10_000, description="every other topic")
    replication_factor: int = Field(default=1, ge=1, le=32)
    min_insync_replicas: int = Field(default=1, ge=1, le=32)
    dead_letters_retention_ms: int = Field(
        default=7 * 24 * 3600 * 1000,
        ge=60_000,
        description="how long `dead-letters` keeps a letter (ms), set when the topic is created",
    )
    dead_letters_retention_bytes: int = Field(
        default=1024**3,
        ge=1024**2,
        description="bytes each `dead-letters` partition keeps before its oldest letters go, "
        "set when the topic is created",
    )

    def topic(self, role: TopicRole) -> str:
        """The deployment's name of a topic: ``<prefix>.<role>``, e.g. ``ctxstream.events``."""
        return f"{self.topic_prefix}.{role}"
