"""What ``ctxstream serve`` reads from its environment, validated at start."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from schemas.codec import MAX_RECORD_BYTES
from schemas.kafka.settings import KafkaSettings
from streams.sink.target_schema import DEFAULT_SCHEMA, target_schema


class ServeSettings(KafkaSettings):
    """The HTTP API's settings (``CTXSTREAM_`` prefix), besides the cluster and topic ones."""

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    http_bind: str = "127.0.0.1"
    """The address it listens on; 0.0.0.0 faces every network the machine has."""
    http_port: int = Field(default=8080, ge=0, le=65_535)
    """The port it listens on (0: one the OS picks, logged at start)."""
    http_max_body_bytes: int = Field(
        default=16 * 1024 * 1024, ge=MAX_RECORD_BYTES, le=256 * 1024 * 1024
    )
    """The largest request body read (a batch of events); a larger one is answered 413."""
    http_keys_max_staleness_s: float = Field(default=30.0, gt=0, le=3_600)
    """How long the API keys may go unconfirmed by the broker before every request gets 503."""
    http_key_checks_waiting: int = Field(default=32, ge=0, le=10_000)
    """Checks of old (scrypt) API keys that may wait for one of the two that run at once;
    a request past them is answered 503 at once (keys made now need no such check)."""
    http_failed_keys_remembered: int = Field(default=10_000, ge=0, le=1_000_000)
    """Wrong secrets of old (scrypt) keys remembered for 10 minutes, answered 401 without
    another check."""
    http_refused_key_delay_s: float = Field(default=1.0, ge=0, le=60)
    """How long the 401 to a wrong or unknown API key is held: a client flooding wrong
    secrets gets one answer a second on each connection it holds, not the server's time."""
    http_shutdown_s: int = Field(default=5, ge=0, le=300)
    """How long stopping waits for open requests and subscriptions."""
    http_max_connections: int = Field(default=512, ge=1, le=100_000)
    """Connections and requests the server holds at once; past it uvicorn answers 503."""
    http_keep_alive_s: int = Field(default=5, ge=1, le=300)
    """How long an idle connection is kept open after its last answer."""
    http_max_header_bytes: int = Field(default=16 * 1024, ge=4 * 1024, le=1024 * 1024)
    """The largest request line and headers read; a larger one closes the connection."""
    http_tenant_max_reads: int = Field(default=8, ge=1, le=10_000)
    """Reads (context, projection, expand, rewind, fork) one tenant may have open at once."""
    http_max_reads: int = Field(default=64, ge=1, le=10_000)
    """Reads all tenants together may have open at once (below the read pool's 100)."""
    http_tenant_max_subscriptions: int = Field(default=4, ge=1, le=10_000)
    """Subscriptions one tenant may have open at once."""
    http_max_subscriptions: int = Field(default=64, ge=1, le=10_000)
    """Subscriptions all tenants together may have open at once."""
    http_max_batch_events: int = Field(default=1_000, ge=1, le=100_000)
    """Events one ``events:batch`` may carry; more is answered 413."""
    http_max_batch_bytes: int = Field(
        default=4 * 1024 * 1024, ge=MAX_RECORD_BYTES, le=256 * 1024 * 1024
    )
    """The largest body of an append (``events``, ``events:batch``); larger is answered 413."""
    http_tenant_append_events_per_s: float = Field(default=2_000.0, gt=0, le=1_000_000)
    """Events one tenant may append a second, in bursts of one full batch."""
    http_tenant_append_bytes_per_s: float = Field(
        default=8 * 1024 * 1024, gt=0, le=1024 * 1024 * 1024
    )
    """Body bytes one tenant may append a second, in bursts of one full batch."""
    http_tenant_forks_per_minute: float = Field(default=10.0, gt=0, le=100_000)
    """Forks one tenant may start a minute, as many at once."""
    http_tenant_fork_records_per_s: int = Field(default=1_000, ge=1, le=1 << 30)
    """How many of their sources' records one tenant's forks may read and fold a second
    (from each source's first record to the fork's offset), in bursts of 16 s of it; a
    fork that read more delays the tenant's next one until it is paid back. A fork's
    own partition waits while it is folded: this bounds how often that happens."""
    http_tenant_heavy_read_bytes_per_s: int = Field(default=256 * 1024, ge=1024, le=1 << 34)
    """What one tenant's heavy reads (as-of contexts, rewinds: O(session) on the worker) may
    answer a second, counted in answer bytes (at least 64 KiB a read), in bursts of 16 s of
    it; a read that answered more delays the tenant's next one until it is paid back."""
    http_max_oversized_sessions: int = Field(default=10_000, ge=1, le=10_000_000)
    """Sessions over their size cap the server remembers (the newest), to refuse appends 409."""
    http_health_cache_s: float = Field(default=2.0, gt=0, le=3_600)
    """How long ``/healthz`` answers from its last look at the broker before it looks
    again: however often it is polled, the broker gets one small request a period."""
    postgres_dsn: SecretStr = SecretStr("")
    """The SQL read model's database (postgresql://user:password@host:port/database), which
    the session listing and history routes read; empty: they answer 503 naming this setting."""
    sink_schema: str = DEFAULT_SCHEMA
    """The read model's target schema those routes read (the sink's ``CTXSTREAM_SINK_SCHEMA``)."""
    http_read_model_connections: int = Field(default=4, ge=1, le=1_000)
    """Connections to the read model's database the server holds at most (opened as needed);
    a listing or history read waits for a free one."""

    @field_validator("sink_schema")
    @classmethod
    def _schema(cls, value: str) -> str:
        return target_schema(value)
