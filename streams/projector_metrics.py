"""The projector's Prometheus metrics, in a registry of their own.

Counters of folded, redelivered and dead-lettered records, requests and snapshots;
gauges of lag, cache, quarantine and liveness; the batch-latency histogram. Every
metric with its type and meaning: ``streams/README.md``, "Metrics".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from schemas.dead_letter import DeadLetter
from schemas.heap.heap_policy import HeapPolicy

_BATCH_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ProjectorMetrics:
    """The metrics one projector worker exposes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        prefix = "ctxstream_projector"
        self.events_applied = Counter(
            f"{prefix}_events_applied", "Records folded into a projection.", registry=self.registry
        )
        self.events_redelivered = Counter(
            f"{prefix}_events_redelivered",
            "Records skipped because their offset was applied before.",
            registry=self.registry,
        )
        self.requests_emitted = Counter(
            f"{prefix}_requests_emitted",
            "Compaction requests sent.",
            ["trigger", "kind"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            f"{prefix}_dead_letters", "Records sent to dead-letters.", registry=self.registry
        )
        self.snapshots = Counter(
            f"{prefix}_snapshots", "Snapshots sent to projections.", registry=self.registry
        )
        self.consumer_lag = Gauge(
            f"{prefix}_consumer_lag",
            "Records of an events partition not yet fetched (highwater - position).",
            ["partition"],
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            f"{prefix}_batch_seconds",
            "Seconds to fold one batch and send its outputs.",
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.sessions_cached = Gauge(
            f"{prefix}_sessions_cached",
            "Session projections held in memory.",
            registry=self.registry,
        )
        self.cache_bytes = Gauge(
            f"{prefix}_cache_bytes",
            "Estimated bytes the cached session projections retain.",
            registry=self.registry,
        )
        self.dead_letters_by_stage = Counter(
            f"{prefix}_dead_letters_by_stage",
            "Records sent to dead-letters, by the stage that refused them.",
            ["stage"],
            registry=self.registry,
        )
        self.sessions_quarantined = Gauge(
            f"{prefix}_sessions_quarantined",
            "Sessions whose stored entries could not be read back.",
            registry=self.registry,
        )
        self.requests_refused = Counter(
            f"{prefix}_requests_refused",
            "Compaction requests refused on events after their last attempt.",
            registry=self.registry,
        )
        self.last_batch_age_seconds = Gauge(
            f"{prefix}_last_batch_age_seconds",
            "Seconds since a batch was last folded (read at scrape time).",
            registry=self.registry,
        )
        self.folding_alive = Gauge(
            f"{prefix}_folding_alive",
            "1 while the task folding events runs, 0 once it has died.",
            registry=self.registry,
        )
        self.conflicting_summaries = Counter(
            f"{prefix}_conflicting_summaries",
            "Compaction events ADK authored on apps the pipeline compacts (owner 'pipeline'), "
            "by the compaction entry configuring the app.",
            ["entry"],
            registry=self.registry,
        )
        self.gaps_probed = Counter(
            f"{prefix}_gaps_probed",
            "Skipped offsets checked against the log, by its answer.",
            ["answer"],
            registry=self.registry,
        )

    def watch_gc(self, policy: HeapPolicy) -> None:
        """Expose the collections of `policy`'s process, read when scraped.

        ``ctxstream_projector_gc_seconds_total`` and
        ``ctxstream_projector_gc_collections_total``, labelled ``generation``, and
        ``ctxstream_projector_gc_whole_collections_total``.
        """
        self.registry.register(_GcCollector(policy))

    def outputs_sent(
        self, *, applied: int, redelivered: int, snapshots: int, letters: Sequence[DeadLetter]
    ) -> None:
        """Count what a batch sent: records applied and redelivered, snapshots, dead letters."""
        self.events_applied.inc(applied)
        self.events_redelivered.inc(redelivered)
        self.snapshots.inc(snapshots)
        self.dead_letters.inc(len(letters))
        for letter in letters:
            self.dead_letters_by_stage.labels(stage=letter.stage).inc()

    def summaries_conflicted(self, entries: Sequence[str]) -> None:
        """Count a batch's conflicting summaries, one per entry of `entries` (repeated)."""
        for entry in entries:
            self.conflicting_summaries.labels(entry=entry).inc()

    def batch_folded(
        self, seconds: float, *, sessions_cached: int, cache_bytes: int, quarantined: int
    ) -> None:
        """Record a batch folded and sent in `seconds`, and the cache it leaves."""
        self.batch_seconds.observe(seconds)
        self.sessions_cached.set(sessions_cached)
        self.cache_bytes.set(cache_bytes)
        self.sessions_quarantined.set(quarantined)

    def set_lag(self, lag: Mapping[int, int]) -> None:
        """Replace the lag gauge's partitions with `lag`."""
        self.consumer_lag.clear()
        for partition, value in lag.items():
            self.consumer_lag.labels(partition=str(partition)).set(value)

    def exposition(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


class _GcCollector(Collector):
    """The process's cyclic collections as Prometheus counters, read when scraped.

    The meter's callback only adds to numbers of its own; a metric's lock taken
    inside a collection (which may start while that lock is held) could deadlock.
    """

    def __init__(self, policy: HeapPolicy) -> None:
        self._policy = policy

    def collect(self) -> Iterator[CounterMetricFamily]:
        reading = self._policy.meter.reading()
        seconds = CounterMetricFamily(
            "ctxstream_projector_gc_seconds",
            "Seconds the cyclic garbage collector took, by generation.",
            labels=["generation"],
        )
        collections = CounterMetricFamily(
            "ctxstream_projector_gc_collections",
            "Collections of the cyclic garbage collector, by generation.",
            labels=["generation"],
        )
        for generation, (spent, count) in enumerate(
            zip(reading.seconds, reading.collections, strict=True)
        ):
            seconds.add_metric([str(generation)], spent)
            collections.add_metric([str(generation)], count)
        yield seconds
        yield collections
        yield CounterMetricFamily(
            "ctxstream_projector_gc_whole_collections",
            "Whole collections the worker's policy ran (frozen objects included).",
            value=self._policy.whole_collections,
        )
