"""Context and projection reads, each sent to the worker that owns the session's partition.

The client's read side (:meth:`ctxstream.Client.context` and its kin): the
arguments are checked (:mod:`ctxstream.reads.arguments`), the read is routed
(:mod:`ctxstream.reads.routing`) and the answer is checked to be of the
session asked for. With ``min_offset`` (an offset ``append`` returned) the
answer reflects every record of the session's partition up to it:
read-your-writes. The design (routing, deadlines, the read secret, end
offsets) is in ``ctxstream/reads/README.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar

import orjson
from pydantic import ValidationError

from ctxstream.errors import ContextReadError
from ctxstream.reads.arguments import checked, checked_key, context_query, of_session
from ctxstream.reads.duplicate_lookup import DuplicateLookup
from ctxstream.reads.routing import ReadRouter
from schemas.codec import decode_projection_snapshot
from schemas.errors import DecodeError
from schemas.event import Content
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey
from schemas.log_text import shown
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.read_protocol import (
    ContextAnswer,
    ExpandedPage,
    ExpandQuery,
    HistoryStart,
    ProjectionQuery,
    ReadKind,
    RewindDelta,
    RewindQuery,
    SessionAnswer,
    WriteVerdicts,
)

SessionAnswerT = TypeVar("SessionAnswerT", bound=SessionAnswer)


class ContextReads:
    """Reads of sessions' contexts and projections, each routed to its partition's owner.

    Holds a reader of the `partition-owners` topic and an HTTP session,
    both opened at the first read; :meth:`close` closes them.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        """Reads of the deployment `settings` name; nothing connects yet."""
        self._router = ReadRouter(settings)
        self._lookup = DuplicateLookup(self._router)

    async def close(self) -> None:
        """Close the HTTP session and the Kafka readers, if they were opened."""
        try:
            await self._lookup.close()
        finally:
            await self._router.close()

    def note_written(self, written: Iterable[tuple[int, int]]) -> None:
        """Note records this process appended (partition, offset): their partitions' ends."""
        self._router.ends.note_written(written)

    async def context(
        self,
        session_key: str,
        *,
        agent: str | None,
        branch: str | None,
        include_contents: Literal["default", "none"],
        min_offset: int | None,
        timeout_s: float,
    ) -> list[Content]:
        """The session's assembled contents (see :meth:`ctxstream.Client.context`)."""
        return await self._contents(
            session_key,
            {},
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )

    async def context_as_of(
        self,
        session_key: str,
        offset: int,
        *,
        agent: str | None,
        branch: str | None,
        include_contents: Literal["default", "none"],
        timeout_s: float,
    ) -> list[Content]:
        """The contents right after `offset` (see :meth:`ctxstream.Client.context_as_of`)."""
        return await self._contents(
            session_key,
            {"as_of": "offset"},
            agent=agent,
            branch=branch,
            include_contents=include_contents,
            as_of=offset,
            timeout_s=timeout_s,
        )

    async def contents_json(
        self, session_key: str, renamed: Mapping[str, str], **arguments: object
    ) -> bytes:
        """The contents of a context read as the HTTP API answers them: ``{"contents": [...]}``.

        The worker's answer already holds each content in genai's JSON (camelCase,
        ``None`` left out: :func:`schemas.event.content_to_json`), so its list is
        forwarded as it is, parsed and written again by orjson, never built into
        models: for the long context of an as-of read that is the difference between
        milliseconds and the better part of a second on the caller's loop.
        """
        key, query = context_query(session_key, renamed, arguments)
        body = await self._router.read(key, "context", query)
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ContextReadError(session_key=key, reason="the answer is not JSON") from exc
        contents = answer.get("contents") if isinstance(answer, dict) else None
        if not isinstance(contents, list) or not isinstance(answer.get("session_key"), str):
            raise ContextReadError(session_key=key, reason="the answer is not a context")
        of_session(key, answer["session_key"], answer)
        return orjson.dumps({"contents": contents})

    async def _contents(
        self, session_key: str, renamed: Mapping[str, str], **arguments: object
    ) -> list[Content]:
        """The contents a context read of `arguments` (named as `renamed` says) answers."""
        key, query = context_query(session_key, renamed, arguments)
        return (await self._answer(key, "context", query, ContextAnswer, "a context")).contents

    async def expand(
        self,
        session_key: str,
        summary_event_id: str,
        *,
        page_size: int,
        page_token: str | None,
        min_offset: int | None,
        timeout_s: float,
    ) -> ExpandedPage:
        """A page of a summary's covered events (see :meth:`ctxstream.Client.expand`)."""
        key = checked_key(session_key)
        query = checked(
            ExpandQuery,
            {"summary_id": "summary_event_id"},
            summary_id=summary_event_id,
            page_size=page_size,
            page_token=page_token,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )
        return await self._answer(key, "expand", query, ExpandedPage, "a page of events")

    async def rewind_delta(
        self,
        session_key: str,
        before_invocation_id: str,
        *,
        min_offset: int | None,
        timeout_s: float,
    ) -> dict[str, Any]:
        """The state delta a rewind to `before_invocation_id` carries (reference §10).

        Raises:
            InvocationNotFoundError: No stored event of the session has that invocation.
        """
        key = checked_key(session_key)
        query = checked(
            RewindQuery,
            before_invocation_id=before_invocation_id,
            min_offset=min_offset,
            timeout_s=timeout_s,
        )
        delta = await self._answer(
            key, "rewind-delta", query, RewindDelta, "a rewind's state delta"
        )
        return delta.state_delta

    async def projection(
        self, session_key: str, *, min_offset: int | None, timeout_s: float
    ) -> ProjectionSnapshot:
        """The session's projection snapshot (see :meth:`ctxstream.Client.projection`)."""
        key = checked_key(session_key)
        query = checked(ProjectionQuery, min_offset=min_offset, timeout_s=timeout_s)
        body = await self._router.read(key, "projection", query)
        try:
            snapshot = decode_projection_snapshot(body)
        except DecodeError as exc:
            reason = f"the answer is not a snapshot: {exc}"
            raise ContextReadError(session_key=key, reason=reason) from exc
        return of_session(key, snapshot.session_key, snapshot)

    async def history_start(
        self, session_key: str, *, min_offset: int | None, timeout_s: float
    ) -> HistoryStart:
        """Where the session's history lies on its partition, once its owner folded `min_offset`."""
        key = checked_key(session_key)
        query = checked(ProjectionQuery, min_offset=min_offset, timeout_s=timeout_s)
        return await self._answer(key, "history-start", query, HistoryStart, "a history start")

    async def write_verdicts(
        self, session_key: str, *, min_offset: int | None, timeout_s: float
    ) -> WriteVerdicts:
        """The fold's word on the session's conditional records, once `min_offset` is folded."""
        key = checked_key(session_key)
        query = checked(ProjectionQuery, min_offset=min_offset, timeout_s=timeout_s)
        return await self._answer(key, "write-verdicts", query, WriteVerdicts, "write verdicts")

    async def stored_offsets(
        self, session_key: str, digests: Mapping[str, str], *, timeout_s: float
    ) -> dict[str, int]:
        """Of the events `digests` names (id -> digest), those the session stored equal, and where.

        The append door's duplicate lookup (:mod:`ctxstream.reads.duplicate_lookup`):
        every failure answers ``{}``, so an append never depends on a projector.

        Raises:
            InvalidArgumentError: The key is refused (nothing was sent).
        """
        return await self._lookup.stored_offsets(session_key, digests, timeout_s=timeout_s)

    async def _answer(
        self,
        key: SessionKey,
        kind: ReadKind,
        query: ProjectionQuery,
        model: type[SessionAnswerT],
        what: str,
    ) -> SessionAnswerT:
        """The owner's answer to a `kind` read, as `model`, once it is about `key`.

        Raises:
            ContextReadError: The answer is not `what` (a `model`), or is another session's.
        """
        body = await self._router.read(key, kind, query)
        try:
            answer = model.model_validate_json(body)
        except ValidationError as exc:
            reason = f"the answer is not {what}: {shown(str(exc), 300)}"
            raise ContextReadError(session_key=key, reason=reason) from exc
        return of_session(key, answer.session_key, answer)
