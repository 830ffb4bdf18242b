"""Settings of the sink worker, read once from the environment (``CTXSTREAM_`` prefix)."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from schemas.kafka.settings import KafkaSettings
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.target_schema import DEFAULT_SCHEMA, target_schema


class SinkSettings(KafkaSettings):
    """The cluster and topics (:class:`KafkaSettings`), the database, and the batch bounds."""

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    postgres_dsn: SecretStr = Field(
        default=SecretStr(""), description="postgresql://user:password@host:port/database"
    )
    sink_schema: str = Field(default=DEFAULT_SCHEMA, description="the target schema")
    sink_batch_records: int = Field(
        default=5_000, ge=1, le=1_000_000, description="records fetched per batch, at most"
    )
    sink_fetch_wait_ms: int = Field(
        default=500, ge=1, le=60_000, description="how long one fetch waits for records"
    )
    sink_session_timeout_ms: int = Field(
        default=10_000,
        ge=1_000,
        le=300_000,
        description="the group's session timeout: how soon a dead sink's partitions move",
    )

    sink_cache_sessions: int = Field(
        default=10_000,
        ge=1,
        le=10_000_000,
        description="sessions whose classification state the sink keeps (the rest are rebuilt)",
    )
    sink_gc_threshold: tuple[int, int, int] | None = Field(
        default=(50_000, 20, 100),
        description="gc.set_threshold for the sink process (its cached sessions' events are "
        "a large heap the default thresholds rescan over and over); null keeps Python's",
    )
    sink_gc_period_s: float | None = Field(
        default=60.0,
        gt=0,
        description="turn the automatic cyclic collector off and collect whole after a batch, "
        "at most this often, when the heap grew (schemas.heap.heap_policy, mode off); null "
        "leaves it on",
    )
    memory_apps: str = Field(
        default="",
        description="apps whose memory mode is 'all': '*' or names separated by commas",
    )

    @field_validator("memory_apps")
    @classmethod
    def _memory_apps(cls, value: str) -> str:
        MemoryApps.parse(value)
        return value

    @field_validator("sink_schema")
    @classmethod
    def _schema(cls, value: str) -> str:
        return target_schema(value)
