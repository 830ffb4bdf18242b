"""The collector's meter: collections counted by generation, timed, and figures from them."""

from __future__ import annotations

import gc

import pytest

from schemas.heap.gc_meter import GcMeter, GcReading


class Ticks:
    """A clock that moves 0.5 s at every reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


class Node:
    """Cyclic garbage: a node pointing at itself."""

    def __init__(self) -> None:
        self.me = self


def test_each_collection_is_counted_in_its_generation_and_timed() -> None:
    meter = GcMeter(Ticks())
    meter.start()
    gc.collect(0)
    gc.collect(1)
    gc.collect(2)
    gc.collect(2)
    meter.stop()
    reading = meter.reading()
    assert reading.collections == (1, 1, 2)
    # Each collection read the clock twice, 0.5 s apart.
    assert reading.seconds == (0.5, 0.5, 1.0)
    assert reading.total_seconds == 2.0


def test_the_cyclic_garbage_found_is_counted() -> None:
    meter = GcMeter()
    meter.start()
    for _ in range(10):
        Node()
    gc.collect()
    meter.stop()
    # Each node and its attribute dictionary.
    assert meter.reading().collected >= 10


def test_a_stopped_meter_counts_nothing_more_and_keeps_its_figures() -> None:
    meter = GcMeter(Ticks())
    gc.collect()
    assert meter.reading() == GcReading()
    meter.start()
    meter.start()  # once only
    gc.collect()
    meter.stop()
    gc.collect()
    assert meter.reading().collections == (0, 0, 1)
    assert meter._on_collection not in gc.callbacks


def test_readings_subtract_add_and_report_a_share() -> None:
    earlier = GcReading((0.1, 0.2, 0.3), (10, 2, 1), 5)
    later = GcReading((0.2, 0.2, 1.3), (30, 3, 2), 9)
    between = later.since(earlier)
    assert between.seconds == pytest.approx((0.1, 0.0, 1.0))
    assert between.collections == (20, 1, 1)
    assert between.collected == 4
    again = earlier.plus(between)
    assert again.seconds == pytest.approx(later.seconds)
    assert (again.collections, again.collected) == ((30, 3, 2), 9)
    assert between.figures(4.4) == {
        "seconds": 1.1,
        "share": 0.25,
        "collections": [20, 1, 1],
        "collected": 4,
    }
    assert between.share(0) == 0.0
