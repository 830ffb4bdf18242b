"""Closing under cancellation: the close runs to its end, within its bound, and says why not."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio
import pytest

from ctxstream.closing import close_shielded, start_shielded


class _Steps:
    """A start or close that awaits `steps` times, as starting or stopping a Kafka reader does."""

    def __init__(self, steps: int = 3) -> None:
        self.steps = steps
        self.ended = False

    async def run(self) -> None:
        for _ in range(self.steps):
            await asyncio.sleep(0.01)
        self.ended = True


async def test_a_close_in_a_cancelled_scope_runs_to_its_end() -> None:
    resource = _Steps()
    after: list[str] = []

    async def holder() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await close_shielded(resource.run, what="resource")
            after.append("past the close")

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await asyncio.sleep(0.01)
            scope.cancel()
    assert resource.ended
    assert after == ["past the close"]


@pytest.mark.parametrize("shielded", [close_shielded, start_shielded])
async def test_a_start_or_close_goes_on_when_its_caller_is_cancelled_then_that_is_raised(
    shielded: Callable[..., Awaitable[None]],
) -> None:
    # A close must end; so must a start (aiokafka's start cancelled half-way leaves its
    # first connection where no stop reaches it).
    steps = _Steps(steps=10)

    async def caller() -> None:
        await shielded(steps.run, what="reader")

    task = asyncio.ensure_future(caller())
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps.ended


async def test_a_close_that_does_not_end_is_abandoned_at_its_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def never() -> None:
        await asyncio.Event().wait()

    with caplog.at_level(logging.WARNING, logger="ctxstream.closing"):
        await asyncio.wait_for(close_shielded(never, what="stuck reader", timeout_s=0.05), 5.0)
    assert "close abandoned what=stuck reader reason=no end within 0.05 s" in caplog.text


async def test_a_close_that_fails_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def failing() -> None:
        raise ConnectionResetError("peer gone")

    with caplog.at_level(logging.WARNING, logger="ctxstream.closing"):
        await close_shielded(failing, what="reader")
    assert "close failed what=reader reason=ConnectionResetError('peer gone')" in caplog.text


async def test_a_start_that_fails_raises_its_error() -> None:
    async def refused() -> None:
        raise ConnectionRefusedError("no broker")

    with pytest.raises(ConnectionRefusedError, match="no broker"):
        await start_shielded(refused, what="reader")
