"""The sink process's collections: a whole one after a batch when the heap grew, in time."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from streams.sink.heap import GROWTH, MIN_HEAP, HeapCollector


class Node:
    """A cyclic-garbage maker: a node pointing at itself."""

    def __init__(self) -> None:
        self.me = self


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The automatic collector off for the test, back on after it."""
    was = gc.isenabled()
    gc.collect()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _cycles(count: int) -> weakref.ref[Node]:
    """`count` self-referencing nodes left as garbage; a weak reference to one of them."""
    nodes = [Node() for _ in range(count)]
    probe = weakref.ref(nodes[0])
    del nodes
    return probe


@pytest.mark.usefixtures("collector_off")
def test_start_turns_the_automatic_collector_off() -> None:
    HeapCollector(1.0).start()
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_off")
def test_a_grown_heap_is_collected_once_the_period_passed() -> None:
    clock = Clock()
    heap = HeapCollector(10.0, clock)
    heap.start()
    probe = _cycles(int(GROWTH * MIN_HEAP) + 1_000)
    clock.now = 9.9
    assert heap.settle() is False  # grown, but the period has not passed
    assert probe() is not None
    clock.now = 10.0
    assert heap.settle() is True
    assert probe() is None


@pytest.mark.usefixtures("collector_off")
def test_a_heap_that_did_not_grow_is_not_collected() -> None:
    clock = Clock()
    heap = HeapCollector(10.0, clock)
    heap.start()
    probe = _cycles(100)
    clock.now = 1_000.0
    assert heap.settle() is False
    assert probe() is not None
    gc.collect()
    assert probe() is None


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive, not 0"):
        HeapCollector(0)
