"""The pacing of heavy reads: one computation at a time, letting go after each slice of work."""

from __future__ import annotations

import threading
import time

from streams.heavy_reads import Pacer


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
