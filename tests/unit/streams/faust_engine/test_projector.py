"""The folding loop's supervision: a failed batch stops the worker, never silently."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from streams.faust_engine.projector import FoldingTask
from streams.projector_metrics import ProjectorMetrics


async def _batches(count: int) -> AsyncIterator[Sequence[Any]]:
    for number in range(count):
        yield [number]


def _alive(metrics: ProjectorMetrics) -> float | None:
    return metrics.registry.get_sample_value("ctxstream_projector_folding_alive")


async def test_every_batch_is_folded_and_the_task_stays_alive() -> None:
    metrics = ProjectorMetrics()
    task = FoldingTask(metrics)
    folded: list[Sequence[Any]] = []

    async def fold(batch: Sequence[Any]) -> None:
        folded.append(batch)

    await task.run(_batches(3), fold)
    assert folded == [[0], [1], [2]]
    assert task.failure is None
    assert _alive(metrics) == 1.0
    assert task.problem(waiting=0, batch_age_s=1_000.0, timeout_s=10.0) is None


async def test_a_failed_batch_marks_the_task_dead_tells_the_worker_and_raises() -> None:
    metrics = ProjectorMetrics()
    task = FoldingTask(metrics)
    told: list[BaseException] = []
    task.on_failure = told.append

    async def fold(batch: Sequence[Any]) -> None:
        if batch == [1]:
            raise ConnectionError("broker went away")

    with pytest.raises(ConnectionError):
        await task.run(_batches(3), fold)
    assert len(told) == 1
    assert isinstance(told[0], ConnectionError)
    assert _alive(metrics) == 0.0
    problem = task.problem(waiting=0, batch_age_s=0.0, timeout_s=10.0)
    assert problem is not None
    assert "folding died" in problem
    assert "broker went away" in problem


def test_liveness_fails_only_when_records_wait_longer_than_the_timeout() -> None:
    task = FoldingTask(ProjectorMetrics())
    assert task.problem(waiting=0, batch_age_s=500.0, timeout_s=120.0) is None
    assert task.problem(waiting=5, batch_age_s=119.0, timeout_s=120.0) is None
    stalled = task.problem(waiting=5, batch_age_s=121.0, timeout_s=120.0)
    assert stalled is not None
    assert "5 records wait" in stalled
