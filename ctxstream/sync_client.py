"""The client for scripts: :class:`~ctxstream.client.Client`'s calls, blocking.

Each call runs the async client's on an event loop of the :class:`SyncClient`'s own
(an :class:`asyncio.Runner`), as httpx pairs ``Client`` with ``AsyncClient``; a
subscription is a blocking iterator whose reader runs while it waits.

Example::

    with SyncClient(bootstrap="127.0.0.1:9092") as client:
        client.append("acme/support/u1/s1", {"author": "user", ...})
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Coroutine, Generator, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from ctxstream.appends.event_records import EventInput
from ctxstream.appends.results import AppendResult
from ctxstream.client import Client
from ctxstream.replay import OnProgress, ReplayReport
from ctxstream.subscription import CONNECT_TIMEOUT_S, Subscribed
from ctxstream.subscription_request import OffsetArgument, TimeArgument
from schemas.event import Content
from schemas.keys import Offset
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.read_protocol import DEFAULT_PAGE_SIZE, DEFAULT_READ_WAIT_S, ExpandedPage
from streams.projector_settings import ProjectorSettings

T = TypeVar("T")


class SyncClient:
    """:class:`Client` for scripts: the same calls, blocking, on an event loop of its own.

    Example::

        with SyncClient(bootstrap="127.0.0.1:9092") as client:
            client.append("acme/support/u1/s1", {"author": "user", ...})
    """

    def __init__(self, **arguments: Any) -> None:
        """A blocking client; `arguments` as :class:`Client`'s."""
        self._runner = asyncio.Runner()
        self._client = Client(**arguments)
        self._closed = False

    def __enter__(self) -> Self:
        self._run(self._client.start())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the client and close its event loop (and the subscriptions still open)."""
        try:
            self._run(self._client.stop())
        finally:
            self._closed = True
            self._runner.close()

    def append(self, session_key: str, event: EventInput) -> Offset:
        """:meth:`Client.append`, blocking."""
        return self._run(self._client.append(session_key, event))

    def append_many(self, session_key: str, events: Sequence[EventInput]) -> list[Offset]:
        """:meth:`Client.append_many`, blocking."""
        return self._run(self._client.append_many(session_key, events))

    def append_result(self, session_key: str, event: EventInput) -> AppendResult:
        """:meth:`Client.append_result`, blocking."""
        return self._run(self._client.append_result(session_key, event))

    def append_results(self, session_key: str, events: Sequence[EventInput]) -> list[AppendResult]:
        """:meth:`Client.append_results`, blocking."""
        return self._run(self._client.append_results(session_key, events))

    def rewind(
        self,
        session_key: str,
        before_invocation_id: str,
        *,
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> Offset:
        """:meth:`Client.rewind`, blocking."""
        return self._run(
            self._client.rewind(
                session_key, before_invocation_id, min_offset=min_offset, timeout_s=timeout_s
            )
        )

    def delete_session(self, session_key: str) -> Offset:
        """:meth:`Client.delete_session`, blocking."""
        return self._run(self._client.delete_session(session_key))

    def fork(
        self,
        session_key: str,
        at_offset: int,
        new_session_key: str,
        *,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> Offset:
        """:meth:`Client.fork`, blocking."""
        return self._run(
            self._client.fork(session_key, at_offset, new_session_key, timeout_s=timeout_s)
        )

    def context(
        self,
        session_key: str,
        *,
        agent: str | None = None,
        branch: str | None = None,
        include_contents: Literal["default", "none"] = "default",
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> list[Content]:
        """:meth:`Client.context`, blocking."""
        return self._run(
            self._client.context(
                session_key,
                agent=agent,
                branch=branch,
                include_contents=include_contents,
                min_offset=min_offset,
                timeout_s=timeout_s,
            )
        )

    def projection(
        self,
        session_key: str,
        min_offset: int | None = None,
        *,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> ProjectionSnapshot:
        """:meth:`Client.projection`, blocking."""
        return self._run(self._client.projection(session_key, min_offset, timeout_s=timeout_s))

    def context_as_of(
        self,
        session_key: str,
        offset: int,
        *,
        agent: str | None = None,
        branch: str | None = None,
        include_contents: Literal["default", "none"] = "default",
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> list[Content]:
        """:meth:`Client.context_as_of`, blocking."""
        return self._run(
            self._client.context_as_of(
                session_key,
                offset,
                agent=agent,
                branch=branch,
                include_contents=include_contents,
                timeout_s=timeout_s,
            )
        )

    def expand(
        self,
        session_key: str,
        summary_event_id: str,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        page_token: str | None = None,
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_READ_WAIT_S,
    ) -> ExpandedPage:
        """:meth:`Client.expand`, blocking."""
        return self._run(
            self._client.expand(
                session_key,
                summary_event_id,
                page_size=page_size,
                page_token=page_token,
                min_offset=min_offset,
                timeout_s=timeout_s,
            )
        )

    def subscribe(
        self,
        tenant: str,
        *,
        sessions: Iterable[str] | None = None,
        from_offset: OffsetArgument = None,
        from_time: TimeArgument = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> Generator[Subscribed, None, None]:
        """:meth:`Client.subscribe`, as a blocking iterator (the reader runs while it waits).

        Example::

            with SyncClient() as client:
                for item in client.subscribe("acme", from_offset=0):
                    if item.snapshot is not None:  # None: item.deleted was deleted
                        print(item.snapshot.session_key, item.snapshot.invocations_total)
        """
        items = self._client.subscribe(
            tenant,
            sessions=sessions,
            from_offset=from_offset,
            from_time=from_time,
            connect_timeout_s=connect_timeout_s,
        )
        return self._blocking(items)

    def replay(
        self,
        target_prefix: str,
        *,
        from_offset: OffsetArgument = None,
        from_time: TimeArgument = None,
        sessions: Iterable[str] | None = None,
        progress: OnProgress | None = None,
        projector_settings: ProjectorSettings | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> ReplayReport:
        """:meth:`Client.replay`, blocking (`progress` is called on this thread)."""
        return self._run(
            self._client.replay(
                target_prefix,
                from_offset=from_offset,
                from_time=from_time,
                sessions=sessions,
                progress=progress,
                projector_settings=projector_settings,
                connect_timeout_s=connect_timeout_s,
            )
        )

    def _blocking(
        self, items: AsyncGenerator[Subscribed, None]
    ) -> Generator[Subscribed, None, None]:
        try:
            while True:
                try:
                    yield self._run(_next(items))
                except StopAsyncIteration:
                    return
        finally:
            # Once the client is closed, its loop has closed the generator already.
            if not self._closed:
                self._run(items.aclose())

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(call)


async def _next(items: AsyncGenerator[T, None]) -> T:
    # The runner runs coroutines only, and anext() returns another kind of awaitable.
    return await anext(items)
