"""Server-sent events on the wire, and the pings of an idle stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import anyio
import pytest

from ctxstream.api.sse import PING, sse_event, with_pings


def test_an_event_is_its_fields_then_a_blank_line() -> None:
    assert sse_event("snapshot", '{"a":1}', event_id="0:17,1:42") == (
        b'event: snapshot\nid: 0:17,1:42\ndata: {"a":1}\n\n'
    )
    assert sse_event("error", "one\ntwo") == b"event: error\ndata: one\ndata: two\n\n"
    with pytest.raises(ValueError, match="one line"):
        sse_event("snapshot", "{}", event_id="0:1\n\nevent: forged")


async def test_an_idle_stream_is_pinged_and_closing_it_releases_its_events() -> None:
    released = asyncio.Event()
    go_on = asyncio.Event()

    async def events() -> AsyncGenerator[bytes, None]:
        try:
            yield b"first"
            await go_on.wait()
            yield b"second"
            await asyncio.Event().wait()  # never: the stream stays open
        finally:
            released.set()

    stream = with_pings(events(), until=asyncio.Event(), interval_s=0.05)
    received = [await anext(stream), await anext(stream), await anext(stream)]
    assert received == [b"first", PING, PING]
    go_on.set()
    while (item := await anext(stream)) == PING:
        pass
    assert item == b"second"
    assert not released.is_set()
    await stream.aclose()
    assert released.is_set()


async def test_a_stream_ends_when_its_events_do() -> None:
    async def events() -> AsyncGenerator[bytes, None]:
        yield b"only"

    stream = with_pings(events(), until=asyncio.Event(), interval_s=10)
    assert [item async for item in stream] == [b"only"]


async def test_a_stream_ends_once_the_server_stops() -> None:
    released = asyncio.Event()

    async def events() -> AsyncGenerator[bytes, None]:
        try:
            yield b"first"
            await asyncio.Event().wait()
        finally:
            released.set()

    stopping = asyncio.Event()
    stream = with_pings(events(), until=stopping, interval_s=10)
    assert await anext(stream) == b"first"
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.01)
    stopping.set()
    with pytest.raises(StopAsyncIteration):
        await waiting
    assert released.is_set()


async def test_a_stream_cancelled_by_its_cancel_scope_still_closes_its_events() -> None:
    # Starlette ends the stream of a client that went away by cancelling an anyio
    # scope, which cancels every await of the cleanup again (review probe P4).
    reached: list[str] = []

    async def events() -> AsyncGenerator[bytes, None]:
        try:
            await asyncio.Event().wait()
            yield b"never"
        finally:
            reached.append("finally")
            await asyncio.sleep(0)  # what stopping a Kafka reader awaits
            reached.append("after its await")

    async def consume() -> None:
        async for _ in with_pings(events(), until=asyncio.Event(), interval_s=60):
            pass

    async with anyio.create_task_group() as streams:
        streams.start_soon(consume)
        await asyncio.sleep(0.05)
        streams.cancel_scope.cancel()
    assert reached == ["finally", "after its await"]
