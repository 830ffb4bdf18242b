"""Settings of the pipeline's processes, read once from the environment."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class KafkaSettings(BaseSettings):
    """Where the cluster is and how the deployment's topics are made.

    Every option is an environment variable with the ``CTXSTREAM_`` prefix,
    e.g. ``CTXSTREAM_KAFKA_BOOTSTRAP=127.0.0.1:9092``.
    """

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    kafka_bootstrap: str = "127.0.0.1:9092"
    topic_prefix: str = Field(default="ctxstream", pattern=r"^[A-Za-z0-9._-]{1,100}$")
    events_partitions: int = Field(default=12, ge=1, le=10_000)
    partitions: int = Field(default=6, ge=1, le=10_000, description="every other topic")
    replication_factor: int = Field(default=1, ge=1, le=32)
    min_insync_replicas: int = Field(default=1, ge=1, le=32)
