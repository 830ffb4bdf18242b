"""Heavy reads: one computation at a time, letting go after each slice, stopped at the deadline."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from projections.fold.time_travel import ReadStopped, StopCheck
from streams.reads.heavy import HeavyReads, OutOfTime, Pacer


def test_heavy_computations_take_turns_and_never_overlap() -> None:
    pacer = Pacer(work_s=0.0005, pause_s=0.0005)
    inside = 0
    most = 0
    guard = threading.Lock()

    def compute(check: object) -> int:
        nonlocal inside, most
        assert callable(check)
        for _ in range(200):
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.00005)
            with guard:
                inside -= 1
            assert not check()
        return 1

    threads = [
        threading.Thread(target=pacer.paced, args=(compute, lambda: False)) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1  # the computing thread lets go only at its checks, and holds its turn


def test_a_computation_pauses_after_each_slice_and_reports_the_stop() -> None:
    pacer = Pacer(work_s=0.0, pause_s=0.002)  # every check ends a slice
    stopped = [False] * 9 + [True]
    seen: list[bool] = []

    def compute(check: object) -> list[bool]:
        assert callable(check)
        return [bool(check()) for _ in range(10)]

    started = time.monotonic()
    seen = pacer.paced(compute, iter(stopped).__next__)
    assert seen == stopped  # the check says what the read's stop says
    assert time.monotonic() - started >= 10 * 0.002  # and paused at every one of them


def test_a_computation_whose_turn_does_not_come_by_its_deadline_is_not_run() -> None:
    pacer = Pacer()
    holding = threading.Event()
    release = threading.Event()

    def hold(check: object) -> None:
        holding.set()
        release.wait(5)

    holder = threading.Thread(target=pacer.paced, args=(hold, lambda: False))
    holder.start()
    assert holding.wait(5)
    ran: list[bool] = []
    started = time.monotonic()
    with pytest.raises(ReadStopped):
        pacer.paced(lambda check: ran.append(True), lambda: False, deadline=started + 0.05)
    release.set()
    holder.join()
    assert not ran
    assert time.monotonic() - started >= 0.05  # it waited its time for the turn
    assert pacer.paced(lambda check: 7, lambda: False, deadline=time.monotonic() + 1) == 7


def test_a_heavy_read_past_its_deadline_stops_and_frees_its_slot() -> None:
    async def run() -> tuple[int, float, bool]:
        reads = HeavyReads(1)
        checks = 0

        def forever(stop: StopCheck) -> None:
            nonlocal checks
            while True:
                checks += 1
                if stop():
                    raise ReadStopped("stopped")
                time.sleep(0.001)

        started = time.monotonic()
        async with reads.admitted(1.0, "test") as slot:
            assert slot is not None
            with pytest.raises(OutOfTime):
                await slot.run(forever, deadline=started + 0.1)
        stopped_after = time.monotonic() - started
        async with reads.admitted(1.0, "test") as again:  # the slot came free
            free = again is not None and await again.run(lambda stop: True, deadline=started + 5)
        reads.close()
        return checks, stopped_after, free

    checks, stopped_after, free = asyncio.run(run())
    assert checks > 1
    assert 0.1 <= stopped_after < 1.0
    assert free


def test_an_abandoned_heavy_read_stops_as_abandoned_not_out_of_time() -> None:
    async def run() -> None:
        reads = HeavyReads(1)
        started = threading.Event()

        def forever(stop: StopCheck) -> None:
            started.set()
            while not stop():
                time.sleep(0.001)
            raise ReadStopped("stopped")

        async with reads.admitted(1.0, "test") as slot:
            assert slot is not None
            task = asyncio.ensure_future(slot.run(forever, deadline=time.monotonic() + 30))
            await asyncio.to_thread(started.wait, 5)
            slot.stop()
            with pytest.raises(ReadStopped) as stopped:
                await task
            assert not isinstance(stopped.value, OutOfTime)
        reads.close()

    asyncio.run(run())
