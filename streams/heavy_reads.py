"""The budget of a worker's O(session) reads, answered in threads off the folding loop.

A read whose answer costs what the whole session holds (an ``as_of`` refold,
a rewind delta's replay, a view that needs the session's history) would
hold the event loop that folds every partition the worker owns for as long
as it runs. :class:`HeavyReads` runs such answers in a pool of
``heavy_reads`` threads instead, over the immutable projection the read
took on the loop; the loop goes on folding and answering the cheap reads
meanwhile (the GIL is shared, the loop is not held).

At most ``heavy_reads`` such reads run at once on a worker: one more waits
for a slot within its own time, then is refused as ``busy``. A read whose
client goes away (the read server cancels its handler) tells its thread to
stop: the computation asks a :data:`~streams.time_travel.StopCheck` between
records and ends with :class:`~streams.time_travel.ReadStopped`, which is
logged (``heavy read stopped``); its slot is free once the thread ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from schemas.log_text import shown
from streams.time_travel import ReadStopped, StopCheck

logger = logging.getLogger(__name__)

T = TypeVar("T")


class HeavyRead:
    """One admitted heavy read: runs its computations in the budget's threads."""

    def __init__(self, executor: ThreadPoolExecutor, label: str) -> None:
        self._executor = executor
        self._label = label
        self._stop = threading.Event()
        self.running: Future[Any] | None = None

    def stop(self) -> None:
        """Tell the running computation to stop at its next check."""
        self._stop.set()

    async def run(self, compute: Callable[[StopCheck], T]) -> T:
        """`compute` in a thread, asked to stop once this read is abandoned.

        Raises:
            Exception: What `compute` raised.
        """
        started = time.monotonic()
        label = self._label

        def guarded(stop: StopCheck) -> T:
            try:
                return compute(stop)
            except ReadStopped:
                logger.info(
                    "heavy read stopped: its client went away %s after %.3f s",
                    label,
                    time.monotonic() - started,
                )
                raise

        future = self._executor.submit(guarded, self._stop.is_set)
        self.running = future
        return await asyncio.wrap_future(future)


class HeavyReads:
    """At most `budget` heavy reads at once, each computed in a thread of its own."""

    def __init__(self, budget: int) -> None:
        """A budget of `budget` slots and as many threads."""
        self.budget = budget
        self._slots = asyncio.Semaphore(budget)
        self._executor = ThreadPoolExecutor(max_workers=budget, thread_name_prefix="heavy-read")

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
        read = HeavyRead(self._executor, shown(label))
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
