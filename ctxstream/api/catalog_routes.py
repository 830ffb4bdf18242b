"""The routes the SQL read model answers: a tenant's sessions, and a session's stored records.

Both read :class:`~ctxstream.sessions.catalog.SessionCatalog`, hold one of the tenant's read
slots, and answer 503 ``unavailable`` naming ``CTXSTREAM_POSTGRES_DSN`` when the server has no
read model. More in ``ctxstream/api/README.md`` (catalog_routes.py).
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from ctxstream.api.auth import require_tenant, session_of
from ctxstream.api.dependencies import (
    SESSION,
    Authenticated,
    ReadSlot,
    Services,
    SessionPath,
    json_answer,
)
from ctxstream.api.errors import ApiError
from ctxstream.api.models import HISTORY_RESPONSES, LIST_RESPONSES
from ctxstream.api.services import ApiServices
from ctxstream.sessions.catalog import (
    DEFAULT_LIMIT,
    DEFAULT_WAIT_S,
    MAX_LIMIT,
    MAX_WAIT_S,
    SessionCatalog,
)
from ctxstream.sessions.cursor import MAX_CURSOR_CHARS
from ctxstream.sessions.pages import HistoryPage, SessionPage
from schemas.json_bounds import INT64_MAX

NOT_CONFIGURED: Final = (
    "the SQL read model is not configured: start ctxstream serve with CTXSTREAM_POSTGRES_DSN "
    "(and CTXSTREAM_SINK_SCHEMA, the sink's schema) set"
)
_PART = Query(min_length=1, max_length=1_000)
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="at most this many a page")]

router = APIRouter()


def _catalog(services: ApiServices) -> SessionCatalog:
    if services.sessions is None:
        raise ApiError("unavailable", NOT_CONFIGURED)
    return services.sessions


@router.get(
    "/v1/tenants/{tenant}/sessions",
    response_model=SessionPage,
    responses=LIST_RESPONSES,
    dependencies=[ReadSlot],
    summary="A page of the tenant's sessions, newest first, from the SQL read model",
)
async def list_sessions(
    tenant: Annotated[str, Path(max_length=1_000)],
    services: Services,
    caller: Authenticated,
    app: Annotated[str | None, _PART] = None,
    user: Annotated[str | None, _PART] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS)] = None,
) -> Response:
    """The tenant's sessions (of `app`, of its `user`), by last activity, newest first.

    Deleted sessions are left out. Pass `next_cursor` as `cursor` for the next page; a
    cursor continues only the listing (tenant, app, user) that gave it. `consistent_as_of`
    says which records of `events` the page saw.
    """
    require_tenant(caller, tenant)
    page = await _catalog(services).list_sessions(
        tenant, app=app, user=user, limit=limit, cursor=cursor
    )
    return json_answer(page)


@router.get(
    f"{SESSION}/events",
    response_model=HistoryPage,
    responses=HISTORY_RESPONSES,
    dependencies=[ReadSlot],
    summary="A page of the session's records as the SQL read model stores them",
)
async def history(
    session_key: SessionPath,
    services: Services,
    caller: Authenticated,
    after: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    limit: Limit = DEFAULT_LIMIT,
    min_offset: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    timeout_s: Annotated[float, Query(gt=0, le=MAX_WAIT_S)] = DEFAULT_WAIT_S,
) -> Response:
    """The session's records after offset `after`, in offset order, each with its status.

    Its current incarnation's (a deleted session answers 404). Pass `next_after` as
    `after` for the next page. With `min_offset` (an append's offset) the read waits
    until the read model holds it, up to `timeout_s` (504 after).
    """
    key = session_of(caller, session_key)
    page = await _catalog(services).history(
        key, after=after, limit=limit, min_offset=min_offset, timeout_s=timeout_s
    )
    return json_answer(page)
