"""The worker's collections on its metrics page: counters read from the policy when scraped."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from schemas.heap.heap_policy import HeapPolicy
from streams.projector_metrics import ProjectorMetrics


@pytest.fixture
def policy() -> Iterator[HeapPolicy]:
    """A started frozen policy, stopped (the collector given back) after the test."""
    started = HeapPolicy("frozen", (50_000, 20, 100), 60.0)
    started.start()
    try:
        yield started
    finally:
        started.stop()


def _samples(metrics: ProjectorMetrics) -> dict[str, float]:
    lines = metrics.exposition().decode().splitlines()
    return {
        name: float(value)
        for name, value in (line.rsplit(" ", 1) for line in lines if not line.startswith("#"))
        if "_gc_" in name
    }


def test_collections_are_counted_by_generation_when_scraped(policy: HeapPolicy) -> None:
    metrics = ProjectorMetrics()
    metrics.watch_gc(policy)
    before = _samples(metrics)
    gc.collect(0)
    gc.collect(0)
    policy.released()
    policy.settle()  # a whole collection: generation 2
    after = _samples(metrics)
    count = 'ctxstream_projector_gc_collections_total{generation="%s"}'
    assert after[count % 0] == before[count % 0] + 2
    assert after[count % 2] == before[count % 2] + 1
    assert after[count % 1] == before[count % 1]
    whole = "ctxstream_projector_gc_whole_collections_total"
    assert (before[whole], after[whole]) == (1, 2)  # the start's, the release's
    seconds = 'ctxstream_projector_gc_seconds_total{generation="0"}'
    assert after[seconds] > before[seconds]
