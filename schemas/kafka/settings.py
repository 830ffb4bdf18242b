"""Where the cluster is and what the deployment's topics are called, for every process.

The projector's engines, the summarizer and the tools all read these; this is
their one definition.

Every option is an environment variable with the ``CTXSTREAM_`` prefix, e.g.
``CTXSTREAM_KAFKA_BOOTSTRAP=127.0.0.1:9092``; each process's settings extend
:class:`KafkaSettings`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal, Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.kafka.security import ClientSecurity, SaslMechanism, client_security

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


def default_read_secret_file() -> Path:
    """Where the read plane's secret is kept by default: one file per user.

    ``$XDG_CONFIG_HOME/ctxstream/read-secret``, else ``~/.config/ctxstream/read-secret``:
    every process the same user starts (``ctxstream up``'s workers and server, a
    client in another terminal) finds the same one.
    """
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "ctxstream" / "read-secret"


def default_bootstrap() -> str:
    """The broker ``deploy/kafka/start`` and ``ctxstream up`` start on this machine.

    ``127.0.0.1:$CTXSTREAM_KAFKA_PORT`` when that port is set (the one variable
    that moves that broker), else ``127.0.0.1:9092``: a user who moved the
    broker's port reaches it with no second setting, and never another broker
    that happens to hold 9092. ``CTXSTREAM_KAFKA_BOOTSTRAP`` wins over both.
    """
    port = os.environ.get("CTXSTREAM_KAFKA_PORT", "").strip()
    return f"127.0.0.1:{port or 9092}"


class KafkaSettings(BaseSettings):
    """The cluster and the deployment's topics."""

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    kafka_bootstrap: str = Field(default_factory=default_bootstrap)
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
    read_secret: SecretStr | None = Field(default=None, min_length=32, max_length=1_000)
    """The read plane's shared secret (at least 32 characters): the projectors' read
    endpoints require it, and it signs their partition claims. None: the one in
    :attr:`read_secret_file` (:mod:`schemas.read_secret`)."""
    read_secret_file: Path = Field(default_factory=default_read_secret_file)
    """Where the secret is read when :attr:`read_secret` is not set; the first process that
    needs it creates it (mode 0600, 32 random bytes as hex)."""
    read_connections: int = Field(default=256, ge=1, le=10_000)
    """The client's connections to the projectors' read endpoints, at most, all together;
    more than the HTTP API's per-server cap of concurrent reads, so a read never waits for
    one while the API admits it."""
    duplicate_lookup_timeout_s: float = Field(default=1.0, ge=0, le=60)
    """How long an append waits for the session's owner to say which of its events it stored
    already (those are answered with their first offset and not written again); past it, or
    with no owner to ask, the events are written and the fold drops copies. 0: never ask."""

    kafka_sasl_username: str | None = Field(default=None, min_length=1, max_length=256)
    """The process's principal on a ``deploy/kafka/start --secure`` broker (SASL_PLAINTEXT);
    None: PLAINTEXT, as to the development broker."""
    kafka_sasl_password: SecretStr | None = Field(default=None, min_length=1, max_length=1_000)
    """That principal's password (``<broker data>/credentials/<user>``)."""
    kafka_sasl_mechanism: SaslMechanism = "SCRAM-SHA-512"

    @model_validator(mode="after")
    def _sasl_complete(self) -> Self:
        if self.kafka_sasl_username is not None and self.kafka_sasl_password is None:
            raise ValueError("KAFKA_SASL_USERNAME is set: set KAFKA_SASL_PASSWORD too")
        return self

    def client_security(self) -> ClientSecurity:
        """The SASL arguments of every aiokafka client this process opens."""
        password = self.kafka_sasl_password
        return client_security(
            self.kafka_sasl_username,
            None if password is None else password.get_secret_value(),
            self.kafka_sasl_mechanism,
        )

    def topic(self, role: TopicRole) -> str:
        """The deployment's name of a topic: ``<prefix>.<role>``, e.g. ``ctxstream.events``."""
        return f"{self.topic_prefix}.{role}"
