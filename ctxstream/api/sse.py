"""Server-sent events on the wire: each event's lines, and a comment while a stream is idle.

The format (WHATWG HTML, "Server-sent events"): fields ``event``, ``id`` and
one ``data`` line per line of data, ended by a blank line; a line starting
with ``:`` is a comment clients ignore, which keeps an idle connection from
looking dead to a proxy and lets the server notice a client that went away.

Example::

    sse_event("snapshot", '{"partition":1}', event_id="0:17,1:42") -> the lines

    event: snapshot
    id: 0:17,1:42
    data: {"partition":1}

"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Final

from ctxstream.closing import close_shielded

#: What an idle stream sends every :data:`PING_INTERVAL_S`.
PING: Final = b": ping\n\n"
PING_INTERVAL_S: Final = 15.0


def sse_event(event: str, data: str, *, event_id: str | None = None) -> bytes:
    """One event's bytes. Pure.

    Raises:
        ValueError: `event` or `event_id` holds a line break (they are ours: a bug).
    """
    if any(c in text for text in (event, event_id or "") for c in "\r\n"):
        raise ValueError("an event's type and id are one line each")
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.extend(f"data: {line}" for line in data.splitlines() or [""])
    return ("\n".join(lines) + "\n\n").encode()


async def with_pings(
    events: AsyncGenerator[bytes, None],
    *,
    until: asyncio.Event,
    interval_s: float = PING_INTERVAL_S,
) -> AsyncGenerator[bytes, None]:
    """`events` as they come, and :data:`PING` whenever none came for `interval_s`.

    The stream ends when `events` do or once `until` is set (the server is
    stopping). The next event is awaited in a task of its own, which a ping
    does not cancel; closing this iterator (the client went away) cancels
    that task and closes `events`, so what they hold (a Kafka reader) is
    released: shielded from the cancellation that ends the stream, within
    :data:`~ctxstream.closing.CLOSE_TIMEOUT_S`
    (:func:`~ctxstream.closing.close_shielded`).
    """
    pending: asyncio.Task[bytes | None] | None = None
    stopping = asyncio.ensure_future(until.wait())
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(_next(events))
            done, _ = await asyncio.wait(
                {pending, stopping}, timeout=interval_s, return_when=asyncio.FIRST_COMPLETED
            )
            if stopping in done:
                return
            if not done:
                yield PING
                continue
            event, pending = pending.result(), None
            if event is None:
                return
            yield event
    finally:
        stopping.cancel()
        await close_shielded(lambda: _closed(events, pending), what="event stream")


async def _closed(
    events: AsyncGenerator[bytes, None], pending: asyncio.Task[bytes | None] | None
) -> None:
    """`events` closed, after the task awaiting their next one (if any) has ended."""
    if pending is not None:
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pending
    await events.aclose()


async def _next(events: AsyncGenerator[bytes, None]) -> bytes | None:
    # A task may not end in StopAsyncIteration; None says the events ended.
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None
