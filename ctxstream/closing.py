"""Starting and closing a Kafka client whatever cancels the caller: shielded, bounded in time.

A Kafka reader closes by awaiting (its background tasks, its connections), and
a ``finally`` that awaits is fragile once its task is cancelled: Starlette ends
a streaming response whose client went away through an anyio cancel scope, and
anyio cancels every later await inside that scope again, so a plain
``finally: await consumer.stop()`` never gets past its first await and the
reader stays connected for as long as the process runs. Starting is fragile
too: aiokafka's start cancelled half-way leaves its first connection open where
no close can reach it.

More in ``ctxstream/README.md`` (closing.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

logger = logging.getLogger(__name__)

#: How long a close may take, and how long a cancelled start may go on; then it is abandoned.
CLOSE_TIMEOUT_S: Final = 10.0
# The starts and closes under way, so that none is collected before it ends.
_running: set[asyncio.Task[None]] = set()


async def close_shielded(
    close: Callable[[], Awaitable[object]], *, what: str, timeout_s: float = CLOSE_TIMEOUT_S
) -> None:
    """Run `close()` to its end, or for at most `timeout_s`, even if the caller is cancelled.

    A close that fails or runs out of time is logged at WARNING, not raised:
    it runs in ``finally`` blocks, where raising would hide what ended the
    block. A cancellation of the caller that arrives during the close is raised
    once the close has ended.

    Args:
        close: What closes the resource (``consumer.stop``, ``events.aclose``).
        what: The resource, as the log names it.
        timeout_s: The most the close may take.

    Raises:
        asyncio.CancelledError: The caller was cancelled while the close ran.
    """
    closing = _tracked(_bounded(close, what, timeout_s))
    if await _waited(closing, timeout_s=None):
        raise asyncio.CancelledError


async def start_shielded(start: Callable[[], Awaitable[object]], *, what: str) -> None:
    """Run `start()`; if the caller is cancelled meanwhile, let it end first (up to a bound).

    Without a cancellation this is ``await start()``: its own time bound is the
    caller's. Once the caller is cancelled, the start may go on for
    :data:`CLOSE_TIMEOUT_S` (shielded as a close is), so that what it opened is
    there for the close; then the cancellation is raised.

    Raises:
        asyncio.CancelledError: The caller was cancelled during the start.
        Exception: What `start()` raised, when the caller was not cancelled.
    """
    starting = _tracked(_called(start))
    try:
        await asyncio.shield(starting)
    except asyncio.CancelledError:
        if starting.cancelled():  # the start itself was cancelled, not its caller
            raise
        await _waited(starting, timeout_s=CLOSE_TIMEOUT_S)
        if not starting.done():
            logger.warning("start left running what=%s after %g s", what, CLOSE_TIMEOUT_S)
        elif not starting.cancelled() and starting.exception() is not None:
            logger.info("start failed after cancellation what=%s", what)
        raise


def _tracked(call: Awaitable[None]) -> asyncio.Task[None]:
    task = asyncio.ensure_future(call)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


async def _called(call: Callable[[], Awaitable[object]]) -> None:
    await call()


async def _waited(task: asyncio.Task[None], *, timeout_s: float | None) -> bool:
    """Wait for `task` to end (or `timeout_s`), shielded; whether the caller was cancelled."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    interrupted = False
    with anyio.CancelScope(shield=True):
        while not task.done():
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            try:
                # Unlike awaiting the task, a cancelled wait leaves the task running.
                await asyncio.wait({task}, timeout=remaining)
            except asyncio.CancelledError:
                interrupted = True
    return interrupted


async def _bounded(close: Callable[[], Awaitable[object]], what: str, timeout_s: float) -> None:
    try:
        async with asyncio.timeout(timeout_s):
            await close()
    except TimeoutError:
        logger.warning("close abandoned what=%s reason=no end within %g s", what, timeout_s)
    except Exception as exc:  # noqa: BLE001 - a close that fails must not hide why it ran
        logger.warning("close failed what=%s reason=%r", what, exc)
