"""The worker's collector policy: what it freezes, when it collects whole, what it gives back."""

from __future__ import annotations

import gc
import weakref

import pytest

from schemas.heap.heap_policy import GROWTH, MIN_HEAP, HeapPolicy, log_gc

THRESHOLD = (50_000, 20, 100)


class Node:
    """Cyclic garbage once dropped: a node pointing at itself."""

    def __init__(self) -> None:
        self.me = self


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _dropped_cycles(count: int) -> weakref.ref[Node]:
    """`count` self-referencing nodes, settled in the heap, then dropped; a probe of one."""
    nodes = [Node() for _ in range(count)]
    return weakref.ref(nodes[0])


def _growth_due() -> int:
    """Objects that, added to the heap just collected whole, make the next whole one due."""
    heap = gc.get_freeze_count()
    return int((1 + GROWTH) * max(MIN_HEAP, heap)) - heap + 1_000


def test_frozen_moves_what_a_batch_left_out_of_the_automatic_collections() -> None:
    policy = HeapPolicy("frozen", THRESHOLD, 60.0, Clock())
    policy.start()
    assert gc.get_threshold() == THRESHOLD
    assert gc.isenabled()
    left = [Node() for _ in range(1_000)]
    before = gc.get_freeze_count()
    assert policy.settle() is False
    assert gc.get_freeze_count() >= before + len(left)
    assert all(not any(o is n for o in gc.get_objects(generation=0)) for n in left[:3])


def test_frozen_cyclic_garbage_waits_for_the_whole_collection_a_release_brings() -> None:
    policy = HeapPolicy("frozen", THRESHOLD, 60.0, Clock())
    policy.start()
    nodes = [Node() for _ in range(100)]
    probe = weakref.ref(nodes[0])
    policy.settle()  # the nodes were alive: frozen
    del nodes
    gc.collect()
    assert probe() is not None  # frozen cycles are out of every automatic reach
    policy.settle()
    assert probe() is not None  # no release, the period has not passed
    policy.released()
    assert policy.settle() is True
    assert probe() is None
    assert policy.whole_collections == 2  # the start's, the release's


def test_frozen_objects_nothing_refers_to_are_freed_at_once() -> None:
    policy = HeapPolicy("frozen", THRESHOLD, 60.0, Clock())
    policy.start()
    kept = [Node.__new__(Node) for _ in range(10)]  # no cycle: freed by reference counting
    probe = weakref.ref(kept[0])
    policy.settle()
    del kept
    assert probe() is None


def test_a_grown_heap_is_collected_whole_once_the_period_passed() -> None:
    clock = Clock()
    policy = HeapPolicy("frozen", THRESHOLD, 10.0, clock)
    policy.start()
    nodes = [Node() for _ in range(_growth_due())]
    probe = weakref.ref(nodes[0])
    policy.settle()
    del nodes
    clock.now = 9.9
    assert policy.settle() is False  # grown, but the period has not passed
    assert probe() is not None
    clock.now = 10.0
    assert policy.settle() is True
    assert probe() is None


def test_a_heap_that_did_not_grow_is_not_collected_and_looked_at_once_a_period() -> None:
    clock = Clock()
    policy = HeapPolicy("frozen", THRESHOLD, 10.0, clock)
    policy.start()
    probe = _dropped_cycles(100)
    policy.settle()
    clock.now = 1_000.0
    assert policy.settle() is False
    assert probe() is not None  # kept: a hundred cycles are no growth
    assert policy.whole_collections == 1


def test_off_turns_the_automatic_collector_off_and_counts_what_came_since() -> None:
    clock = Clock()
    policy = HeapPolicy("off", None, 10.0, clock)
    policy.start()
    assert not gc.isenabled()
    probe = _dropped_cycles(_growth_due())
    clock.now = 10.0
    assert probe() is not None  # nothing collects it automatically
    assert policy.settle() is True  # the garbage counts as growth: no freeze needed
    assert probe() is None


def test_automatic_only_sets_the_thresholds() -> None:
    policy = HeapPolicy("automatic", THRESHOLD, 10.0, Clock())
    policy.start()
    policy.released()
    assert gc.get_threshold() == THRESHOLD
    assert gc.get_freeze_count() == 0
    assert policy.settle() is False
    assert policy.whole_collections == 0


def test_stop_gives_the_collector_back_as_it_was() -> None:
    gc.set_threshold(700, 10, 10)
    policy = HeapPolicy("off", THRESHOLD, 10.0, Clock())
    policy.start()
    policy.stop()
    assert gc.isenabled()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_the_cost_is_logged_for_the_benchmarks(caplog: pytest.LogCaptureFixture) -> None:
    policy = HeapPolicy("frozen", THRESHOLD, 10.0, Clock())
    policy.start()
    gc.collect(0)
    caplog.set_level("INFO", logger="schemas.heap.heap_policy")
    log_gc(policy)
    (line,) = caplog.messages
    assert line.startswith("gc mode=frozen seconds=")
    # One explicit collection of generation 2 at the start (the whole one), one of 0 here.
    assert " collections=1/0/1 collected=" in line
    assert line.endswith(" whole=1 whole_found=0")


def test_the_cpu_share_is_of_the_process_time_since_the_start() -> None:
    policy = HeapPolicy("frozen", THRESHOLD, 10.0, Clock())
    policy.start()
    for _ in range(20):
        gc.collect()
    share = policy.cpu_share()
    # Nearly all this process did since the start is collecting.
    assert 0.5 < share <= 1.0


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive, not 0"):
        HeapPolicy("frozen", None, 0)
