"""The summarizer's answers in ``bench ingest``: what it appended, and whether the engine folded it.

``bench ingest`` produces the workload before the engine starts, so the
summaries the summarizer worker writes for the engine's requests land after
the workload in each partition. An engine's run ends once it has folded the
workload (its committed offsets reach the workload's end offsets) and then
every answer that was in the log at that moment (:class:`AnswersFolded`):
the summaries written while the engine folded the backlog are inside the
figure; the requests their folding decides in turn (a session compacting
again and again to catch up) are not waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.projector_metrics import ProjectorMetrics

FETCH_TIMEOUT_MS: Final = 1_000


def counted(metrics: ProjectorMetrics, name: str) -> int:
    """The value of the projector's counter `name` (``ctxstream_projector_<name>_total``)."""
    value = metrics.registry.get_sample_value(f"ctxstream_projector_{name}_total")
    return int(value or 0)


def requests_decided(metrics: ProjectorMetrics) -> int:
    """Requests the projector emitted for the first time, every trigger."""
    return int(
        sum(
            sample.value
            for family in metrics.requests_emitted.collect()
            for sample in family.samples
            if sample.name.endswith("_total") and sample.labels.get("kind") == "first"
        )
    )


async def records_after(bootstrap: str, starts: Mapping[TopicPartition, int]) -> int:
    """Committed records from `starts` to each partition's last stable offset, now."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed"
    )
    await consumer.start()
    await asyncio.sleep(0)  # see tests: stopping before the first step re-raises
    try:
        tps = list(starts)
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, starts[tp])
        found = 0
        while any([await consumer.position(tp) < ends[tp] for tp in tps]):
            batch = await consumer.getmany(timeout_ms=FETCH_TIMEOUT_MS)
            found += sum(len(records) for records in batch.values())
        return found
    finally:
        await consumer.stop()


class AnswersFolded:
    """Whether an engine folded every answer appended after the workload, as of its first call.

    The first call counts the committed records past the workload's end
    offsets (the summarizer's answers so far); each call then compares what
    the engine applied or dead-lettered with the workload plus those.
    """

    def __init__(
        self,
        bootstrap: str,
        workload_ends: Mapping[TopicPartition, int],
        produced: int,
        metrics: ProjectorMetrics,
    ) -> None:
        """For an engine folding the `produced` records that end at `workload_ends`."""
        self._bootstrap = bootstrap
        self._ends = dict(workload_ends)
        self._produced = produced
        self._metrics = metrics
        self.answers: int | None = None
        """Answers appended after the workload by the first call; None before it."""

    async def __call__(self) -> bool:
        """Whether the engine has folded the workload and the answers counted."""
        if self.answers is None:
            self.answers = await records_after(self._bootstrap, self._ends)
        done = counted(self._metrics, "events_applied") + counted(self._metrics, "dead_letters")
        return done >= self._produced + self.answers
