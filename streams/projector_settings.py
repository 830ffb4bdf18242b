"""Settings of the projector worker, read once from the environment."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from projections.compaction_config import CompactionConfig
from projections.contents_request import ContentsRequest
from schemas.codec import MAX_RECORD_BYTES
from schemas.kafka_settings import KafkaSettings
from schemas.keys import SessionKey, parse_session_key

_DEFAULT_COMPACTION = CompactionConfig(compaction_interval=10, overlap_size=1)


class ProjectorSettings(KafkaSettings):
    """Everything the projector reads from its environment (``CTXSTREAM_`` prefix), frozen.

    Mappings are JSON, e.g.
    ``CTXSTREAM_COMPACTION_OVERRIDES='{"acme/support": {"token_threshold": 50000,
    "event_retention_size": 10}}'``; an override key is ``tenant/app`` or ``tenant``
    (the more specific one wins) and replaces the default config whole.
    """

    model_config = SettingsConfigDict(env_prefix="CTXSTREAM_", frozen=True, extra="ignore")

    app_id: str = Field(
        default="ctxstream-projector",
        min_length=1,
        description="the consumer group (and faust app id, and the state changelog's prefix)",
    )
    engine: Literal["native", "faust"] = Field(
        default="native",
        description="faust: the faust-streaming agent; native: aiokafka with one Kafka "
        "transaction per partition and batch (streams.native_engine)",
    )
    store: Literal["auto", "rocksdb", "memory"] = Field(
        default="auto", description="table store; auto: rocksdb when rocksdict imports"
    )
    data_dir: Path = Field(default=Path(".run/projector"), description="faust datadir")
    batch_size: int = Field(default=5000, ge=1, le=100_000)
    batch_within_s: float = Field(default=0.5, gt=0, le=60)
    commit_interval_s: float = Field(default=1.0, gt=0, le=60)
    session_timeout_s: float = Field(
        default=60.0, ge=6, le=300, description="a killed worker's partitions wait this long"
    )
    compaction: CompactionConfig = _DEFAULT_COMPACTION
    compaction_overrides: dict[str, CompactionConfig] = Field(default_factory=dict)
    view_agent_names: dict[str, str] = Field(
        default_factory=dict, description="tenant/app -> agent whose context snapshots describe"
    )
    compaction_request_timeout_s: float = Field(default=300.0, gt=0)
    request_check_interval_s: float = Field(default=5.0, gt=0)
    session_cache_bytes: int = Field(
        default=2 * 1024**3,
        ge=1,
        description="estimated bytes the cached projections may retain in memory (records are "
        "measured as they are decoded); beyond it least recently used sessions are dropped",
    )
    session_max_bytes: int = Field(
        default=256 * 1024**2,
        ge=1,
        description="estimated bytes one session's projection may retain; a record that "
        "would take it over is dead-lettered (stage session-size)",
    )
    inflight_max_bytes: int = Field(
        default=1024**3,
        ge=MAX_RECORD_BYTES,
        description="raw bytes of fetched records waiting to be folded: faust's stream "
        "buffer holds at most this many maximum-size records",
    )
    compaction_request_max_attempts: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="emissions of a request before the projector refuses it on `events` "
        "and the session decides again over a new window",
    )
    liveness_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="/healthz fails when records wait to be folded and no batch finished "
        "for this long, or when the folding task has died",
    )
    gc_threshold: tuple[int, int, int] | None = Field(
        default=(50_000, 20, 100),
        description="gc.set_threshold for the worker process; null keeps Python's (700, 10, 10)",
    )
    fault_transaction_pause_s: float = Field(
        default=0.0,
        ge=0,
        le=600,
        description="fault injection for tests only: the native engine sleeps this long inside "
        "each open transaction, once the broker has its records and before the offsets and "
        "the commit, and logs 'transaction open' first",
    )
    metrics_port: int = Field(default=6066, ge=0, le=65535, description="0: no metrics server")
    metrics_bind: str = "127.0.0.1"

    @property
    def stream_buffer_records(self) -> int:
        """The size of faust's stream buffer: :attr:`inflight_max_bytes` of maximum-size records.

        The buffer is bounded in records, so the byte ceiling holds whatever
        their size; at least 64, so small records still flow in batches.
        """
        return max(64, self.inflight_max_bytes // MAX_RECORD_BYTES)

    def tune_gc(self) -> None:
        """Apply :attr:`gc_threshold` to this process.

        The worker keeps every cached session's events alive, so with Python's
        default thresholds the cyclic collector rescans that heap over and
        over: about 40% of the batch time in ``ctxstream bench ingest``.
        """
        if self.gc_threshold is not None:
            gc.set_threshold(*self.gc_threshold)

    @property
    def table_store(self) -> str:
        """Faust's store URL for the chosen store."""
        match self.store:
            case "rocksdb":
                return "rocksdb://"
            case "memory":
                return "memory://"
            case "auto":
                return "rocksdb://" if importlib.util.find_spec("rocksdict") else "memory://"

    def compaction_for(self, session_key: SessionKey) -> CompactionConfig:
        """The compaction config of the session's app: ``tenant/app``, ``tenant``, default."""
        parts = parse_session_key(session_key)
        overrides = self.compaction_overrides
        return (
            overrides.get(f"{parts.tenant}/{parts.app}")
            or overrides.get(parts.tenant)
            or self.compaction
        )

    def view_request_for(self, session_key: SessionKey) -> ContentsRequest:
        """The contents request the session's snapshots fingerprint."""
        parts = parse_session_key(session_key)
        return ContentsRequest(
            agent_name=self.view_agent_names.get(f"{parts.tenant}/{parts.app}", "")
        )
