"""Settings of the projector worker, read once from the environment."""

from __future__ import annotations

import importlib.util
import logging
import socket
from pathlib import Path
from typing import Final, Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from projections.compaction.config import CompactionConfig
from projections.compaction.ownership import pipeline_compacts
from projections.contents.contents_request import ContentsRequest
from projections.fold.projection import SessionProjection, empty_projection
from schemas.codec import MAX_RECORD_BYTES
from schemas.heap.heap_policy import GcMode, HeapPolicy
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey, parse_session_key

logger = logging.getLogger(__name__)

_DEFAULT_COMPACTION = CompactionConfig(compaction_interval=10, overlap_size=1)
#: :meth:`ProjectorSettings.compaction_entry` of an app no override names.
DEFAULT_ENTRY: Final = "(default)"

#: Kafka's default ``message.max.bytes`` (the deployment's brokers and topics keep it): the
#: largest record batch a broker accepts. A fetch returns a partition's first batch whole even
#: when it is larger than ``max_partition_fetch_bytes``, so one partition's fetched chunk is at
#: most the larger of the two.
BROKER_MAX_BATCH_BYTES: Final = 1_048_588
#: aiokafka's default ``fetch_max_bytes``, which faust's aiokafka driver keeps.
AIOKAFKA_FETCH_MAX_BYTES: Final = 52_428_800
#: Bind addresses that listen on every interface: no address a client could use.
_EVERY_INTERFACE: Final = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - names them, binds none


class ProjectorSettings(KafkaSettings):
    """Everything the projector reads from its environment (``CTXSTREAM_`` prefix), frozen.

    Mappings are JSON, e.g.
    ``CTXSTREAM_COMPACTION_OVERRIDES='{"acme/support": {"token_threshold": 50000,
    "event_retention_size": 10}}'``; an override key is ``tenant/app`` or ``tenant``
    (the more specific one wins) and replaces the default config whole. An entry's
    ``"owner"`` says who compacts the app: ``"pipeline"`` (the default) or ``"adk"``
    (``{"acme/support": {"owner": "adk"}}``: ADK's runner compacts, the projector
    requests nothing; :mod:`projections.compaction.ownership`); any other value is
    refused at start.
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
        "transaction per partition and batch (streams.native_engine.engine)",
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
        default_factory=dict,
        description="tenant/app -> the app's root agent: whom a context read without `agent` "
        "(and the snapshots) is for until an agent of the session replies; after that, the "
        "agent ADK's router would run next (projections.contents.next_agent); unset: ''",
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
    max_partition_fetch_bytes: int = Field(
        default=1024**2,
        ge=64 * 1024,
        le=256 * 1024**2,
        description="bytes one fetch returns of one partition (Kafka's "
        "max.partition.fetch.bytes; faust's consumer_max_fetch_size): the consumer holds at "
        "most one fetched chunk per assigned partition and fetches that partition again only "
        "once all of the chunk was taken, so this bounds what is fetched ahead of the fold "
        "(fetched_bytes_bound); a record batch larger than it still comes, alone",
    )
    fetch_max_bytes: int = Field(
        default=16 * 1024**2,
        ge=64 * 1024,
        le=1024**3,
        description="bytes of one fetch response (Kafka's fetch.max.bytes), native engine: a "
        "response is decoded whole before its chunks join the buffer; faust's aiokafka "
        "driver does not pass it on and keeps aiokafka's 50 MiB",
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
        default=(200_000, 20, 100),
        description="gc.set_threshold for the worker process; null keeps Python's (700, 10, 10). "
        "Frozen after each batch, a batch that leaves fewer new objects than the first is not "
        "collected at all (README, 'The cyclic garbage collector')",
    )
    gc_mode: GcMode = Field(
        default="frozen",
        description="frozen: automatic collections for what a batch drops, what it leaves "
        "frozen after it; off: no automatic collection; automatic: Python's, with gc_threshold "
        "(schemas.heap.heap_policy; README, 'The cyclic garbage collector')",
    )
    gc_period_s: float = Field(
        default=600.0,
        gt=0,
        le=86_400,
        description="frozen and off: a whole collection after a batch at most this often, when "
        "the heap grew by a quarter since the last (and after partitions were revoked); each "
        "walks the whole heap, while frozen garbage is rare (README, 'The cyclic garbage "
        "collector')",
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
    query_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="the native engine's read endpoint (context and projection reads of the "
        "sessions it owns); 0: a port the OS picks. Clients find it on the partition-owners "
        "topic, so every worker may use 0",
    )
    query_bind: str = "127.0.0.1"
    query_advertised_address: str = Field(
        default="",
        pattern=r"^$|^[^\s:/]+:[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$",
        description="host:port clients reach the read endpoint at (behind a NAT or a port "
        "mapping); empty: the bind address and the bound port, the host name when it binds "
        "every interface",
    )
    heavy_reads: int = Field(
        default=2,
        ge=1,
        le=64,
        description="O(session) reads (as_of, rewind-delta, another agent's or branch's view "
        "that needs the session's history) a worker answers at once, each in a thread off the "
        "folding loop; one more waits for a slot within its own timeout_s, then is refused "
        "as busy (429)",
    )
    history_read_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="how long the batch step may read one session's history from events (a "
        "fork's whole line of sources included); past it that session is quarantined, its "
        "records dead-lettered, and the worker folds on",
    )

    @model_validator(mode="after")
    def _response_holds_a_chunk(self) -> Self:
        if self.fetch_max_bytes < self.max_partition_fetch_bytes:
            raise ValueError(
                f"fetch_max_bytes={self.fetch_max_bytes} is below "
                f"max_partition_fetch_bytes={self.max_partition_fetch_bytes}"
            )
        return self

    def query_address(self, bound_port: int) -> str:
        """``host:port`` the read endpoint is advertised at, once it listens on `bound_port`.

        Example: bind ``127.0.0.1``, port 0 bound as 41234 -> ``127.0.0.1:41234``;
        bind ``0.0.0.0`` on host ``w1`` -> ``w1:41234``; bind ``::1`` -> ``[::1]:41234``.
        """
        if self.query_advertised_address:
            return self.query_advertised_address
        host = self.query_bind
        if host in _EVERY_INTERFACE:
            host = socket.gethostname()
        return f"[{host}]:{bound_port}" if ":" in host else f"{host}:{bound_port}"

    def fetched_bytes_bound(
        self, partitions: int, *, brokers: int = 1, record_bytes: int = MAX_RECORD_BYTES
    ) -> int:
        """The most raw bytes of fetched `events` records the worker holds, waiting or in the fold.

        What bounds the memory records take between the broker and the fold
        (the table and the cached projections they then grow are the state,
        bounded by ``session_cache_bytes`` and the store). aiokafka (both
        engines consume through it) keeps at most one fetched chunk per
        assigned partition, ``chunk = max(max_partition_fetch_bytes,``
        :data:`BROKER_MAX_BATCH_BYTES` ``)``, and sends that partition's next
        fetch only once every record of the chunk was taken (0.14's
        ``Fetcher._get_actions_per_node`` skips a partition whose result is
        still buffered); a response being decoded is held whole, beside the
        chunks copied out of it, and each broker answers one fetch at a time.

        * native: ``2 * partitions * chunk`` (the buffer, refilled while the
          batch ``getmany`` took, at most one chunk per partition, is
          folded) plus the responses being decoded,
          ``min(brokers * fetch_max_bytes, partitions * chunk)``. 36 MiB at
          the defaults with 12 partitions and one broker.
        * faust: the same two chunks per partition (aiokafka's buffer, and
          what faust's consumer thread drained from it and is still handing
          to the stream), the responses (:data:`AIOKAFKA_FETCH_MAX_BYTES`
          each), and records of `record_bytes` (faust bounds these in
          records, not bytes): :attr:`stream_buffer_records` in the stream
          buffer, ``batch_size`` in the batch being folded, and one waiting
          for it. 5.7 GiB at the defaults with 13 partitions and records of
          the largest size the codec accepts, nearly all of it the batch and
          the stream buffer; 62 MiB with records of 4 KB.

        Args:
            partitions: Partitions the consumer is assigned (faust: its
                internal leader topic's included).
            brokers: Brokers leading them.
            record_bytes: The largest record's raw size.
        """
        chunk = max(self.max_partition_fetch_bytes, BROKER_MAX_BATCH_BYTES)
        held = 2 * partitions * chunk
        if self.engine == "native":
            return held + min(brokers * self.fetch_max_bytes, partitions * chunk)
        responses = min(brokers * AIOKAFKA_FETCH_MAX_BYTES, partitions * chunk)
        records = (self.stream_buffer_records + self.batch_size + 1) * record_bytes
        return held + responses + records

    @property
    def stream_buffer_records(self) -> int:
        """The size of faust's stream buffer: :attr:`inflight_max_bytes` of maximum-size records.

        The buffer is bounded in records, so the byte ceiling holds whatever
        their size; at least 64, so small records still flow in batches.
        """
        return max(64, self.inflight_max_bytes // MAX_RECORD_BYTES)

    def heap_policy(self) -> HeapPolicy:
        """The worker process's collections (:attr:`gc_mode`), not started yet.

        The worker keeps every cached session's events alive, so with Python's
        default rules the cyclic collector rescans that heap over and over
        (README, "The cyclic garbage collector").
        """
        return HeapPolicy(self.gc_mode, self.gc_threshold, self.gc_period_s)

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
        entry = self.compaction_entry(session_key)
        return self.compaction if entry == DEFAULT_ENTRY else self.compaction_overrides[entry]

    def compaction_entry(self, session_key: SessionKey) -> str:
        """Which entry configures the session's app: ``tenant/app``, ``tenant`` or ``(default)``.

        A bounded label (one value per configured entry), where the session
        key itself would not be.
        """
        parts = parse_session_key(session_key)
        for entry in (f"{parts.tenant}/{parts.app}", parts.tenant):
            if entry in self.compaction_overrides:
                return entry
        return DEFAULT_ENTRY

    def empty_projection_for(self, session_key: SessionKey) -> SessionProjection:
        """The projection a session starts from: its views as its app is configured."""
        return empty_projection(
            session_key,
            self.view_request_for(session_key),
            estimate=self.keeps_estimate_view(session_key),
        )

    def keeps_estimate_view(self, session_key: SessionKey) -> bool:
        """Whether a session's projection keeps the post-invocation estimate's view.

        Kept when the pipeline runs the app's token trigger: the check after an
        invocation then estimates from that view, never from released history
        (:attr:`projections.fold.projection.SessionProjection.estimate_view`).
        """
        config = self.compaction_for(session_key)
        return config.has_token_threshold and pipeline_compacts(config)

    def view_request_for(self, session_key: SessionKey) -> ContentsRequest:
        """The request a session's projection starts with: its view for the app's root agent.

        The view then follows the agent ADK's router would run next
        (:mod:`projections.contents.next_agent`).
        """
        parts = parse_session_key(session_key)
        return ContentsRequest(
            agent_name=self.view_agent_names.get(f"{parts.tenant}/{parts.app}", "")
        )


def checked_events_partitions(settings: ProjectorSettings, found: int) -> int:
    """`found`, the broker's `events` partition count, with a warning when the settings differ.

    Both engines check records against the broker's count, not the settings'.
    """
    if found != settings.events_partitions:
        logger.warning(
            "events has %d partitions, settings say %d: records are checked against %d",
            found,
            settings.events_partitions,
            found,
        )
    return found
