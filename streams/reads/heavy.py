"""The budget of a worker's O(session) reads, answered in threads off the folding loop.

A read whose answer costs what the whole session holds (an ``as_of`` refold,
a rewind delta's replay, a view that needs the session's history) runs in a
pool of ``heavy_reads`` threads (:class:`HeavyReads`) over the immutable
projection the read took on the loop, which goes on folding. One more waits
for a slot within its own time, then is refused as ``busy``; a read whose
client went away, or whose time ran out (:class:`OutOfTime`), is stopped at
its next :data:`~projections.fold.time_travel.StopCheck`. The threads
compute one at a time and pause between slices of work (:class:`Pacer`), so
the loop keeps at least half of the interpreter. More: this folder's README.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final, TypeVar

from projections.fold.time_travel import ReadStopped, StopCheck
from schemas.log_text import shown

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a heavy computation runs before it lets go of the interpreter.
WORK_SLICE_S: Final = 0.005
#: How long it then lets the loop (and everything else) run.
PAUSE_S: Final = 0.005


class OutOfTime(Exception):
    """A heavy read's computation did not end before its read's deadline; it was stopped."""


class Pacer:
    """One heavy computation at a time, pausing after each slice of work."""

    def __init__(self, *, work_s: float = WORK_SLICE_S, pause_s: float = PAUSE_S) -> None:
        """Slices of `work_s`, each followed by a pause of `pause_s`."""
        self._turn = threading.Lock()
        self._work_s = work_s
        self._pause_s = pause_s

    def paced(
        self, compute: Callable[[StopCheck], T], stop: StopCheck, *, deadline: float | None = None
    ) -> T:
        """`compute` in its turn, its checks between records pausing it after each slice.

        Raises:
            ReadStopped: Its turn had not come by `deadline` (monotonic); nothing was computed.
        """
        wait_s = -1.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
        if not self._turn.acquire(timeout=wait_s):
            raise ReadStopped("stopped: its turn did not come before its deadline")
        try:
            slice_end = time.monotonic() + self._work_s

            def check() -> bool:
                nonlocal slice_end
                if time.monotonic() >= slice_end:
                    self._turn.release()
                    try:
                        time.sleep(self._pause_s)
                    finally:
                        self._turn.acquire()
                    slice_end = time.monotonic() + self._work_s
                return stop()

            return compute(check)
        finally:
            self._turn.release()


class HeavyRead:
    """One admitted heavy read: runs its computations in the budget's threads."""

    def __init__(self, executor: ThreadPoolExecutor, pacer: Pacer, label: str) -> None:
        self._executor = executor
        self._pacer = pacer
        self._label = label
        self._stop = threading.Event()
        self.running: Future[Any] | None = None

    def stop(self) -> None:
        """Tell the running computation to stop at its next check."""
        self._stop.set()

    async def run(self, compute: Callable[[StopCheck], T], *, deadline: float) -> T:
        """`compute` in a thread, asked to stop once this read is abandoned or at `deadline`.

        Raises:
            OutOfTime: `deadline` (monotonic) came before `compute` ended.
            Exception: What `compute` raised.
        """
        started = time.monotonic()
        label = self._label
        abandoned = self._stop.is_set

        def stop() -> bool:
            return abandoned() or time.monotonic() >= deadline

        def guarded() -> T:
            try:
                return self._pacer.paced(compute, stop, deadline=deadline)
            except ReadStopped as exc:
                ran = time.monotonic() - started
                if abandoned():
                    logger.info(
                        "heavy read stopped: its client went away %s after %.3f s", label, ran
                    )
                    raise
                logger.info("heavy read stopped: out of time %s after %.3f s", label, ran)
                raise OutOfTime(f"stopped after {ran:.3g} s") from exc

        future = self._executor.submit(guarded)
        self.running = future
        return await asyncio.wrap_future(future)


class HeavyReads:
    """At most `budget` heavy reads at once, each computed in a thread of its own."""

    def __init__(self, budget: int) -> None:
        """A budget of `budget` slots and as many threads."""
        self.budget = budget
        self._slots = asyncio.Semaphore(budget)
        self._executor = ThreadPoolExecutor(max_workers=budget, thread_name_prefix="heavy-read")
        self._pacer = Pacer()

    @contextlib.asynccontextmanager
    async def admitted(self, wait_s: float, label: str) -> AsyncIterator[HeavyRead | None]:
        """A slot for one heavy read, waited for up to `wait_s`; None when none came free.

        The slot is held until the block ends, or when the block is left
        while a computation still runs (the read was abandoned), until that
        computation ended: the threads at work never exceed the budget.
        """
        try:
            await asyncio.wait_for(self._slots.acquire(), max(wait_s, 0.001))
        except TimeoutError:
            yield None
            return
        read = HeavyRead(self._executor, self._pacer, shown(label))
        try:
            yield read
        finally:
            read.stop()
            running = read.running
            if running is None or running.done():
                self._slots.release()
            else:
                loop = asyncio.get_running_loop()
                running.add_done_callback(lambda _: _call_soon(loop, self._slots.release))

    def close(self) -> None:
        """Stop taking computations; those running end on their own (their reads are gone)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: nothing waits for slots any more
        loop.call_soon_threadsafe(callback)
