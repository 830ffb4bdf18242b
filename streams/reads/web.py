"""The native worker's read endpoint: context, projection, expand, rewind, history-start reads.

And the append door's duplicate lookup (``stored-events``), the one read
with a body. Served on ``query_bind:query_port`` (port 0: one the OS picks)
while the engine runs, with the routes of :mod:`schemas.read_protocol`;
answers come from :class:`~streams.reads.sessions.SessionReads`. Its address
(``query_advertised_address``, or the bound one) is what the engine's claims
name on the `partition-owners` topic (:mod:`streams.reads.owners`), which
this endpoint creates when the deployment lacks it. Every route requires the
read credential (:mod:`schemas.read_secret`): a request without it is
refused 401 before anything is parsed. Stopping wakes every read still
waiting (refused as not owned: their clients go to the next owner) before
the server closes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from pydantic import BaseModel, ValidationError

from projections.contents.snapshot import to_snapshot
from projections.fold.projection import (
    NO_OFFSET,
    SessionProjection,
    context_contents,
    default_agent,
)
from projections.fold.session_log import stored_offsets
from projections.fold.state import RewindTargetNotFoundError, rewind_state_delta
from projections.fold.summary_expansion import SummaryMissing, covered_page
from projections.fold.time_travel import StopCheck, projection_as_of, unless_stopped
from projections.fold.verdicts import write_verdicts
from schemas.codec import encode
from schemas.errors import InvalidSessionKeyError
from schemas.keys import SessionKey, validate_session_key
from schemas.log_text import shown
from schemas.read_protocol import (
    REFUSAL_STATUS,
    ContextAnswer,
    ContextQuery,
    ExpandedPage,
    ExpandQuery,
    HistoryStart,
    ProjectionQuery,
    ReadRefusal,
    RefusalKind,
    RewindDelta,
    RewindQuery,
    StoredEvents,
    StoredEventsAsk,
    page_token,
    page_token_offset,
)
from schemas.read_secret import ReadKeys, read_keys
from streams.native_engine.web import listening
from streams.projector_settings import ProjectorSettings
from streams.reads.gate import ReadGate
from streams.reads.heavy import HeavyReads
from streams.reads.owners import PartitionOwners, ensure_owners_topic
from streams.reads.sessions import (
    Answer,
    Answered,
    Busy,
    CommittedSessions,
    NotOwner,
    ReadOutcome,
    SessionReads,
    TimedOut,
    Unreadable,
)

logger = logging.getLogger(__name__)

#: How long stopping waits for reads being answered (waiting ones are woken first).
SHUTDOWN_S: Final = 5.0
#: What a ``busy`` refusal tells the client to wait before it asks again.
BUSY_RETRY_AFTER_S: Final = 1
_JSON: Final = "application/json"
UNAUTHORIZED: Final = (
    "no valid read credential: send 'Authorization: Bearer <credential>', the one derived "
    "from the deployment's read secret (CTXSTREAM_READ_SECRET or CTXSTREAM_READ_SECRET_FILE)"
)

QueryT = TypeVar("QueryT", bound=ProjectionQuery)


def refusal(
    kind: RefusalKind,
    reason: str,
    *,
    partition: int | None = None,
    owner: str | None = None,
    retry_after_s: int | None = None,
) -> web.Response:
    """The response refusing a read: the kind's status, the reason as JSON.

    With `retry_after_s`, the body and a ``Retry-After`` header say when to ask again.
    """
    body = ReadRefusal(
        error=kind, reason=reason, partition=partition, owner=owner, retry_after_s=retry_after_s
    )
    headers = {} if retry_after_s is None else {"Retry-After": str(retry_after_s)}
    return web.Response(
        status=REFUSAL_STATUS[kind], body=encode(body), content_type=_JSON, headers=headers
    )


def _parsed(request: web.Request, model: type[QueryT]) -> tuple[SessionKey, QueryT] | web.Response:
    """The request's session key and query, or the response refusing them."""
    try:
        session_key = validate_session_key(request.match_info["session_key"])
    except InvalidSessionKeyError as exc:
        return refusal("invalid-session-key", str(exc))
    try:
        return session_key, model.model_validate(dict(request.query))
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        return refusal("invalid-parameter", shown(reasons, 500))


def _answer(
    outcome: ReadOutcome[ReadRefusal | EncodedAnswer], query: ProjectionQuery
) -> web.Response:
    match outcome:
        case Answered(value):
            if isinstance(value, ReadRefusal):  # the session holds no such thing
                return refusal(value.error, value.reason, partition=value.partition)
            return web.Response(body=value.body, content_type=_JSON)
        case NotOwner(partition, owner):
            where = f"; its owner is {owner}" if owner else ""
            return refusal(
                "not-owner",
                f"this worker does not own partition {partition}{where}",
                partition=partition,
                owner=owner,
            )
        case TimedOut(partition, None):
            return refusal(
                "timeout",
                f"partition {partition} was not ready to read within {query.timeout_s:.3g} s",
                partition=partition,
            )
        case TimedOut(partition, position):
            name, offset = query.awaited() or ("min_offset", None)
            return refusal(
                "timeout",
                f"partition {partition} has folded the records before offset {position}; "
                f"{name} {offset} was not reached within {query.timeout_s:.3g} s",
                partition=partition,
            )
        case Unreadable(partition, reason):
            return refusal("unreadable", reason, partition=partition)
        case Busy(partition, reason):
            return refusal("busy", reason, partition=partition, retry_after_s=BUSY_RETRY_AFTER_S)


def authenticated(keys: ReadKeys) -> Middleware:
    """The middleware refusing (401) every request without the read credential of `keys`."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not keys.admits(request.headers.get("Authorization")):
            response = refusal("unauthorized", UNAUTHORIZED)
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        return await handler(request)

    return middleware


def read_app(reads: SessionReads, keys: ReadKeys) -> web.Application:
    """The aiohttp application of the read routes, each requiring the credential of `keys`."""

    async def respond(
        request: web.Request,
        model: type[QueryT],
        answer: Callable[[SessionKey, QueryT], Answer[BaseModel]],
        heavy: Callable[[QueryT], bool] = lambda query: False,
        *,
        grows_with_view: bool = True,
    ) -> web.Response:
        parsed = _parsed(request, model)
        if isinstance(parsed, web.Response):
            return parsed
        session_key, query = parsed
        awaited = query.awaited()
        outcome = await reads.read(
            session_key,
            _encoded_in_place(answer(session_key, query)),
            heavy=heavy(query),
            min_offset=None if awaited is None else awaited[1],
            timeout_s=query.timeout_s,
            grows_with_view=grows_with_view,
        )
        return _answer(outcome, query)

    def contents_of(session_key: SessionKey, query: ContextQuery) -> Answer[BaseModel]:
        as_of = query.as_of

        def contents(projection: SessionProjection, stop: StopCheck) -> BaseModel:
            if (unknown := _no_records(projection)) is not None:
                return unknown
            if as_of is not None:
                projection = projection_as_of(projection, as_of, stop)
                if (unknown := _no_records(projection, as_of=as_of)) is not None:
                    return unknown
            # Without `agent`: the agent ADK's router runs next, whom the view serves.
            request = replace(
                projection.view.request,
                agent_name=default_agent(projection) if query.agent is None else query.agent,
                current_branch=query.branch,
                include_contents=query.include_contents,
            )
            return ContextAnswer(
                session_key=session_key,
                last_offset=projection.last_offset,
                contents=context_contents(projection, request),
            )

        return contents

    def snapshot_of(session_key: SessionKey, query: ProjectionQuery) -> Answer[BaseModel]:
        return lambda projection, stop: _no_records(projection) or to_snapshot(projection)

    def verdicts_of(session_key: SessionKey, query: ProjectionQuery) -> Answer[BaseModel]:
        # Never session-not-found: a writer asks after its own conditional append.
        return lambda projection, stop: write_verdicts(projection)

    def start_of(session_key: SessionKey, query: ProjectionQuery) -> Answer[BaseModel]:
        return lambda projection, stop: HistoryStart(
            session_key=session_key,
            first_offset=reads.first_offset(session_key),  # in the step that took `projection`
            last_offset=projection.last_offset,
        )

    async def context_page(request: web.Request) -> web.Response:
        return await respond(request, ContextQuery, contents_of, _travels_in_time)

    async def projection_page(request: web.Request) -> web.Response:
        return await respond(request, ProjectionQuery, snapshot_of)

    async def expand_page(request: web.Request) -> web.Response:
        return await respond(request, ExpandQuery, _expansion_of)

    async def rewind_page(request: web.Request) -> web.Response:
        return await respond(request, RewindQuery, _rewind_delta_of, lambda query: True)

    async def history_start_page(request: web.Request) -> web.Response:
        return await respond(request, ProjectionQuery, start_of)

    async def write_verdicts_page(request: web.Request) -> web.Response:
        return await respond(request, ProjectionQuery, verdicts_of)

    async def stored_events_page(request: web.Request) -> web.Response:
        try:
            asked = StoredEventsAsk.model_validate_json(await request.read())
        except ValidationError as exc:
            reason = f"body: {shown(str(exc), 300)}"
            return refusal("invalid-parameter", reason)
        return await respond(
            request, ProjectionQuery, _stored_events_of(asked), grows_with_view=False
        )

    app = web.Application(middlewares=[authenticated(keys)])
    # One segment, percent-encoded, as read_path writes it; an unencoded key matches too.
    app.router.add_get("/sessions/{session_key:.+}/context", context_page)
    app.router.add_get("/sessions/{session_key:.+}/projection", projection_page)
    app.router.add_get("/sessions/{session_key:.+}/expand", expand_page)
    app.router.add_get("/sessions/{session_key:.+}/rewind-delta", rewind_page)
    app.router.add_get("/sessions/{session_key:.+}/history-start", history_start_page)
    app.router.add_get("/sessions/{session_key:.+}/write-verdicts", write_verdicts_page)
    app.router.add_post("/sessions/{session_key:.+}/stored-events", stored_events_page)
    return app


@dataclass(frozen=True, slots=True)
class EncodedAnswer:
    """An answer already encoded where it was computed (a heavy read's thread)."""

    body: bytes


def _encoded_in_place(answer: Answer[BaseModel]) -> Answer[ReadRefusal | EncodedAnswer]:
    """`answer`, encoded by whoever computes it.

    A heavy answer (the contents of a long session as of an offset, say) can
    take as long to encode as to compute, so its thread does both and the loop
    only sends the bytes; an ordinary one is encoded where it is computed too.
    A refusal stays a model.
    """

    def encoded(projection: SessionProjection, stop: StopCheck) -> ReadRefusal | EncodedAnswer:
        value = answer(projection, stop)
        return value if isinstance(value, ReadRefusal) else EncodedAnswer(encode(value))

    return encoded


def _no_records(projection: SessionProjection, *, as_of: int | None = None) -> ReadRefusal | None:
    """The ``session-not-found`` refusal when `projection` holds no record, or was deleted.

    The projection is of the partition's committed position (or, with
    `as_of`, of that offset), so the answer is exact there: a session
    appended to a moment ago is found once the fold reached its record,
    which a read passing the append's offset as ``min_offset`` waits for.
    """
    if projection.deleted_at is not None:
        reason = (
            f"the session was deleted (its deletion record is at offset {projection.deleted_at} "
            "of its partition) and nothing was appended to it since"
        )
        return ReadRefusal(error="session-not-found", reason=reason)
    if projection.last_offset != NO_OFFSET:
        return None
    if as_of is not None:
        reason = f"the session had no records up to offset {as_of} of its partition"
    else:
        reason = (
            "the session has no records: none was appended, or the projector has not folded "
            "them yet (pass the offset an append returned as min_offset to wait for it)"
        )
    return ReadRefusal(error="session-not-found", reason=reason)


def _travels_in_time(query: ContextQuery) -> bool:
    """An ``as_of`` read refolds the session up to its offset: O(session), a heavy read."""
    return query.as_of is not None


def _expansion_of(session_key: SessionKey, query: ExpandQuery) -> Answer[BaseModel]:
    """The page of the summary's covered events that `query` asks for, or the refusal."""

    def expansion(projection: SessionProjection, stop: StopCheck) -> BaseModel:
        if (unknown := _no_records(projection)) is not None:
            return unknown
        page = covered_page(
            projection.log.live,
            query.summary_id,
            after=page_token_offset(query.page_token),
            size=query.page_size,
        )
        if isinstance(page, SummaryMissing):
            return ReadRefusal(error="summary-not-found", reason=shown(page.reason, 500))
        last = page.records[-1].offset if page.more else None
        return ExpandedPage(
            session_key=session_key,
            summary_id=query.summary_id,
            last_offset=projection.last_offset,
            events=[record.envelope.event for record in page.records],
            next_page_token=None if last is None else page_token(last),
        )

    return expansion


def _rewind_delta_of(session_key: SessionKey, query: RewindQuery) -> Answer[BaseModel]:
    """The state delta of a rewind to `query`'s invocation, or the refusal (reference §10).

    It replays every stored record before the invocation's first one, so a
    session whose projection released its start is answered from its history:
    a heavy read, which stops between records once its client went away.
    """

    def delta(projection: SessionProjection, stop: StopCheck) -> BaseModel:
        if (unknown := _no_records(projection)) is not None:
            return unknown
        records = unless_stopped(projection.log.records, stop)
        events = [record.envelope.event for record in records]
        try:
            state_delta = rewind_state_delta(
                events, projection.state.read_state(), query.before_invocation_id
            )
        except RewindTargetNotFoundError as exc:
            return ReadRefusal(error="invocation-not-found", reason=shown(str(exc), 500))
        return RewindDelta(
            session_key=session_key, last_offset=projection.last_offset, state_delta=state_delta
        )

    return delta


def _stored_events_of(
    asked: StoredEventsAsk,
) -> Callable[[SessionKey, ProjectionQuery], Answer[BaseModel]]:
    """The answer saying which of `asked`'s events the session stored already, and where."""

    def of_session(session_key: SessionKey, query: ProjectionQuery) -> Answer[BaseModel]:
        return lambda projection, stop: StoredEvents(
            session_key=session_key,
            last_offset=projection.last_offset,
            stored=stored_offsets(projection.log, asked.digests),
        )

    return of_session


@contextlib.asynccontextmanager
async def serving_reads(
    settings: ProjectorSettings, gate: ReadGate, sessions: CommittedSessions, *, worker_id: str
) -> AsyncIterator[str]:
    """Serve reads of `sessions` while the block runs; yields the address to advertise."""
    keys = read_keys(settings)
    await ensure_owners_topic(settings)
    owners = PartitionOwners(settings)
    heavy = HeavyReads(settings.heavy_reads)
    app = read_app(SessionReads(gate, sessions, owners, worker_id=worker_id, heavy=heavy), keys)
    try:
        # A client that goes away cancels its read's handler, which stops a heavy read's thread.
        async with listening(
            app,
            settings.query_bind,
            settings.query_port,
            shutdown_timeout_s=SHUTDOWN_S,
            handler_cancellation=True,
        ) as port:
            address = settings.query_address(port)
            logger.info(
                "reads served bind=%s port=%d address=%s worker=%s",
                settings.query_bind,
                port,
                address,
                worker_id,
            )
            try:
                yield address
            finally:
                gate.close()  # reads still waiting answer now, before the server closes
    finally:
        heavy.close()
        await owners.close()
