"""The HTTP API's routes: the client's calls over JSON, for agents in any language.

More in ``ctxstream/api/README.md`` (app.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ctxstream.api import catalog_routes, operations
from ctxstream.api.auth import session_of
from ctxstream.api.bodies import body_bytes, json_object, parsed, validated
from ctxstream.api.concurrency_budget import Lease
from ctxstream.api.dependencies import (
    JSON_MEDIA,
    SESSION,
    Authenticated,
    ReadSlot,
    Services,
    SessionPath,
    json_answer,
)
from ctxstream.api.errors import ApiError, install_error_handlers
from ctxstream.api.metrics import RequestMetrics
from ctxstream.api.models import (
    APPEND_RESPONSES,
    DELETE_RESPONSES,
    EXPAND_RESPONSES,
    FORK_RESPONSES,
    READ_RESPONSES,
    REWIND_RESPONSES,
    SUBSCRIBE_RESPONSE,
    SUBSCRIBE_RESPONSES,
    Appended,
    AppendedEvent,
    AppendedMany,
    ContextContents,
    EventBatch,
    ExpandedEvents,
    ForkRequest,
    RewindRequest,
    documented,
    json_body_of,
)
from ctxstream.api.services import ApiServices
from ctxstream.api.snapshot_stream import StreamPlan, snapshot_events, stream_plan
from ctxstream.api.sse import with_pings
from schemas.event import MAX_ID_CHARS, Event
from schemas.json_bounds import INT64_MAX
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.read_protocol import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_READ_WAIT_S,
    MAX_PAGE_SIZE,
    MAX_READ_WAIT_S,
)

router = APIRouter()


@router.post(
    f"{SESSION}/events",
    response_model=AppendedEvent,
    responses=APPEND_RESPONSES,
    openapi_extra=json_body_of(Event),
    summary="Append one event (ADK's camelCase JSON); its offset, or the stored copy's",
)
async def append(
    session_key: SessionPath, request: Request, services: Services, caller: Authenticated
) -> Response:
    """Append one event to the session; its offset, once every in-sync replica has it.

    An event the session stored already, equal, is not written again: the answer
    is the stored record's offset with ``duplicate`` true.
    """
    key = session_of(caller, session_key)
    raw = await _append_body(request, services, key)
    services.budgets.spend_append(caller.tenant, 1, len(raw))
    result = await services.client.append_result(key, json_object(parsed(raw), name="body"))
    if not result.duplicate:
        services.metrics.events_appended.inc()
    return json_answer(AppendedEvent(offset=result.offset, duplicate=result.duplicate))


@router.post(
    f"{SESSION}/events:batch",
    response_model=AppendedMany,
    responses=APPEND_RESPONSES,
    openapi_extra=json_body_of(EventBatch),
    summary="Append events of one session in order, all or none; their offsets",
    description="A duplicate (an event the session stored already, equal) is not written "
    "again: its offset is the stored one's, and its entry of duplicates is true.",
)
async def append_many(
    session_key: SessionPath, request: Request, services: Services, caller: Authenticated
) -> Response:
    """Append the body's events in order; none when one is refused."""
    key = session_of(caller, session_key)
    raw = await _append_body(request, services, key)
    body = json_object(parsed(raw), name="body")
    events = body.get("events")
    if set(body) != {"events"} or not isinstance(events, list):
        raise ApiError("invalid-argument", 'body: expected {"events": [event, ...]}')
    services.budgets.check_batch(len(events))
    services.budgets.spend_append(caller.tenant, len(events), len(raw))
    for index, event in enumerate(events):
        json_object(event, name=f"events[{index}]")
    results = await services.client.append_results(key, events)
    services.metrics.events_appended.inc(sum(not result.duplicate for result in results))
    return json_answer(
        AppendedMany(
            offsets=[result.offset for result in results],
            duplicates=[result.duplicate for result in results],
        )
    )


@router.get(
    f"{SESSION}/context",
    response_model=ContextContents,
    responses=READ_RESPONSES,
    dependencies=[ReadSlot],
    summary="The session's context, once its projection has folded min_offset",
)
async def context(
    session_key: SessionPath,
    services: Services,
    caller: Authenticated,
    agent: Annotated[str | None, Query(max_length=1_000)] = None,
    branch: Annotated[str | None, Query(max_length=1_000)] = None,
    include_contents: Literal["default", "none"] = "default",
    min_offset: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    as_of: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    timeout_s: Annotated[float, Query(gt=0, le=MAX_READ_WAIT_S)] = DEFAULT_READ_WAIT_S,
) -> Response:
    """The contents a model request of the session would carry (:meth:`Client.context`).

    With `as_of`, the contents the session had right after its record at that
    offset (:meth:`Client.context_as_of`); it waits for that offset as
    `min_offset` does, and the two are not given together.
    """
    key = session_of(caller, session_key)
    if as_of is not None and min_offset is not None:
        raise ApiError("invalid-argument", "as_of, min_offset: give one of them")
    if as_of is not None:
        # O(session) on the worker: paid for in answer bytes by the tenant's heavy-read rate.
        services.budgets.admit_heavy_read(caller.tenant)
    body = await services.client.context_json(
        key,
        agent=agent,
        branch=branch,
        include_contents=include_contents,
        min_offset=min_offset,
        as_of=as_of,
        timeout_s=timeout_s,
    )
    if as_of is not None:
        services.budgets.charge_heavy_read(caller.tenant, len(body))
    return Response(body, media_type=JSON_MEDIA)


@router.get(
    f"{SESSION}/summaries/{{summary_id}}/events",
    response_model=ExpandedEvents,
    responses=EXPAND_RESPONSES,
    dependencies=[ReadSlot],
    summary="A page of the original events a summary of the session covers",
)
async def expand(
    session_key: SessionPath,
    summary_id: Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)],
    services: Services,
    caller: Authenticated,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = DEFAULT_PAGE_SIZE,
    page_token: Annotated[str | None, Query(max_length=20)] = None,
    min_offset: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    timeout_s: Annotated[float, Query(gt=0, le=MAX_READ_WAIT_S)] = DEFAULT_READ_WAIT_S,
) -> Response:
    """The live raw events the summary covers, stream order, paged (:meth:`Client.expand`)."""
    key = session_of(caller, session_key)
    page = await services.client.expand(
        key,
        summary_id,
        page_size=page_size,
        page_token=page_token,
        min_offset=min_offset,
        timeout_s=timeout_s,
    )
    return json_answer(ExpandedEvents(events=page.events, next_page_token=page.next_page_token))


@router.get(
    f"{SESSION}/projection",
    response_model=ProjectionSnapshot,
    responses=READ_RESPONSES,
    dependencies=[ReadSlot],
    summary="The session's projection snapshot, once it has folded min_offset",
)
async def projection(
    session_key: SessionPath,
    services: Services,
    caller: Authenticated,
    min_offset: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    timeout_s: Annotated[float, Query(gt=0, le=MAX_READ_WAIT_S)] = DEFAULT_READ_WAIT_S,
) -> Response:
    """The session's snapshot as the `projections` topic would hold it."""
    key = session_of(caller, session_key)
    snapshot = await services.client.projection(key, min_offset, timeout_s=timeout_s)
    return json_answer(snapshot)


@router.post(
    f"{SESSION}/rewind",
    response_model=Appended,
    responses=REWIND_RESPONSES,
    openapi_extra=json_body_of(RewindRequest),
    dependencies=[ReadSlot],
    summary="Annul an invocation and everything after it; the rewind event's offset",
)
async def rewind(
    session_key: SessionPath, request: Request, services: Services, caller: Authenticated
) -> Response:
    """Append the rewind event of the body's invocation (:meth:`Client.rewind`)."""
    key = session_of(caller, session_key)
    raw = await _append_body(request, services, key)
    asked = validated(RewindRequest, parsed(raw))
    services.budgets.spend_append(caller.tenant, 1, len(raw))
    services.budgets.admit_heavy_read(caller.tenant)  # its state delta replays the session
    try:
        offset = await services.client.rewind(
            key, asked.before_invocation_id, min_offset=asked.min_offset
        )
    finally:
        services.budgets.charge_heavy_read(caller.tenant, 0)
    return json_answer(Appended(offset=offset))


@router.delete(
    "/v1/sessions/{session_key:keyonly}",
    response_model=Appended,
    responses=DELETE_RESPONSES,
    summary="Delete the session; its deletion record's offset",
    description="Reads of the session then answer 404 session-not-found (pass the offset as "
    "min_offset to wait for the deletion) until an append starts it afresh. A session "
    "without records is no error: its deletion is appended all the same.",
)
async def delete_session(
    session_key: SessionPath, services: Services, caller: Authenticated
) -> Response:
    """Append the session's deletion record (:meth:`Client.delete_session`)."""
    key = session_of(caller, session_key)
    services.budgets.spend_append(caller.tenant, 1, 0)
    return json_answer(Appended(offset=await services.client.delete_session(key)))


@router.post(
    f"{SESSION}/fork",
    response_model=Appended,
    responses=FORK_RESPONSES,
    openapi_extra=json_body_of(ForkRequest),
    dependencies=[ReadSlot],
    summary="Start a new session as a fork of this one up to an offset; the fork record's offset",
)
async def fork(
    session_key: SessionPath, request: Request, services: Services, caller: Authenticated
) -> Response:
    """Append the fork record that starts the body's new session (:meth:`Client.fork`).

    Both sessions must be of the caller's tenant. Forks count against
    ``HTTP_TENANT_FORKS_PER_MINUTE``, and the source records each reads against
    ``HTTP_TENANT_FORK_RECORDS_PER_S``; the fork record can be appended only here.
    """
    key = session_of(caller, session_key)
    raw = await body_bytes(request, max_bytes=services.settings.http_max_body_bytes)
    asked = validated(ForkRequest, parsed(raw))
    new_key = session_of(caller, asked.new_session_key)
    tenant, budgets = caller.tenant, services.budgets
    budgets.spend_fork(tenant)
    offset = await services.client.fork(
        key,
        asked.at_offset,
        new_key,
        on_source=lambda source: budgets.charge_fork(tenant, source, asked.at_offset),
    )
    return json_answer(Appended(offset=offset))


async def _append_body(request: Request, services: ApiServices, key: str) -> bytes:
    """The body of an append to `key`, within ``HTTP_MAX_BATCH_BYTES``.

    Raises:
        SessionOverSizeCapError: The session is over its size cap (before the body is read).
        ApiError: ``too-large``: the body is over the limit.
    """
    services.oversized.check(key)
    return await body_bytes(
        request, max_bytes=services.budgets.max_batch_bytes, setting="HTTP_MAX_BATCH_BYTES"
    )


async def _planned(
    tenant: str,
    services: Services,
    caller: Authenticated,
    sessions: Annotated[list[str] | None, Query(description="only these session keys")] = None,
    from_offset: Annotated[
        str | None,
        Query(description="N: offset N of every partition (0: the beginning); or an event id"),
    ] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> _Planned:
    # A reconnecting SSE client sends the id it saw last; it wins over the URL's start.
    start: tuple[str, str] | None = None
    if last_event_id:
        start = ("Last-Event-ID", last_event_id)
    elif from_offset is not None:
        start = ("from_offset", from_offset)
    # The slot is taken before the plan opens any reader, and held until the stream ends.
    lease = services.budgets.subscriptions.acquire(caller.tenant)
    try:
        plan = await stream_plan(services.settings, caller, tenant, sessions, start)
    except BaseException:
        lease.release()
        raise
    return _Planned(plan, lease)


@dataclass(frozen=True, slots=True)
class _Planned:
    """A subscription's plan and the slot of its tenant's it holds."""

    plan: StreamPlan
    lease: Lease


class _LeasedStream(StreamingResponse):
    """A streaming answer that gives its slot back however it ends (cancelled too).

    The release is synchronous, so a cancelled stream's ``finally`` runs it whole.
    """

    def __init__(self, lease: Lease, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lease = lease

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._lease.release()


@router.get(
    "/v1/tenants/{tenant}/projections:subscribe",
    response_class=StreamingResponse,
    responses={200: SUBSCRIBE_RESPONSE, **SUBSCRIBE_RESPONSES},
    summary="The tenant's projection snapshots as server-sent events; resume with Last-Event-ID",
)
async def subscribe(
    planned: Annotated[_Planned, Depends(_planned)], services: Services
) -> StreamingResponse:
    """Each snapshot as an event ``snapshot`` whose id is the position after it.

    It holds one of the tenant's ``HTTP_TENANT_MAX_SUBSCRIPTIONS`` until it ends.
    """
    try:
        snapshots = snapshot_events(services.client, services.auth, planned.plan)
        events = with_pings(snapshots, until=services.stopping)
    except BaseException:
        planned.lease.release()
        raise
    return _LeasedStream(
        planned.lease,
        events,
        media_type="text/event-stream",
        # Proxies must pass each event on at once, not cache or buffer the stream.
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def build_app(services: ApiServices) -> FastAPI:
    """The application of every route, served with `services`."""
    app = FastAPI(
        title="ctxstream",
        version="1",
        description="Append agent sessions' events, read their context with read-your-writes, "
        "rewind them and follow their projections. Every /v1 route takes "
        "'Authorization: Bearer <key>' (ctxstream keys create TENANT); /healthz and /metrics "
        "take none.",
        docs_url="/docs",
        redoc_url=None,
        # A trailing slash is no route's (404 in the error shape), not a bodiless redirect.
        redirect_slashes=False,
    )
    app.state.services = services
    install_error_handlers(app)
    app.include_router(router)
    # After the routes above: a session key may end in /summaries/{id}, whose /events is expand's.
    app.include_router(catalog_routes.router)
    app.include_router(operations.router)
    app.add_middleware(RequestMetrics, metrics=services.metrics)
    # FastAPI's documented way to extend the schema is to replace the method.
    app.openapi = documented(app, [Event, EventBatch, ForkRequest, RewindRequest])  # type: ignore[method-assign]
    return app
