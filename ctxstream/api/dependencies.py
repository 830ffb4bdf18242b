"""What every route of the HTTP API depends on: the session key's path, the caller, a read slot.

FastAPI dependencies shared by the routes' modules (:mod:`ctxstream.api.app`,
:mod:`ctxstream.api.catalog_routes`): the services the app was built with, the caller its
API key names (401 otherwise), a read slot of its tenant (429 when none is free), and the
JSON answer of a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import orjson
from fastapi import Depends, Path, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.convertors import PathConvertor, register_url_convertor

from ctxstream.api.auth import Caller
from ctxstream.api.services import ApiServices
from schemas.codec import encode

JSON_MEDIA = "application/json"


class _AnyKey(PathConvertor):
    """A session key in the path, control characters included: its check names them (422)."""

    regex = "(?s:.*)"  # Starlette's path convertor stops at a new line (no route: 404)


class _KeyOnly(PathConvertor):
    """A session key that is the whole rest of the path: at most four segments.

    So that ``/v1/sessions/<key>/<anything>`` is never this route's (a method
    another route does not take there stays 405 or 404, not a deletion).
    """

    regex = "(?s:[^/]*(?:/[^/]*){0,3})"


register_url_convertor("anykey", _AnyKey())
register_url_convertor("keyonly", _KeyOnly())
SESSION = "/v1/sessions/{session_key:anykey}"
_KEY_HELP = "tenant/app/user/session: four path segments, or one with each '/' as %2F"

SessionPath = Annotated[str, Path(description=_KEY_HELP)]


def json_answer(value: BaseModel | dict[str, object]) -> Response:
    """`value` as the JSON body of a 200 answer (a model as its topic's encoding has it)."""
    body = encode(value) if isinstance(value, BaseModel) else orjson.dumps(value)
    return Response(body, media_type=JSON_MEDIA)


def _services(request: Request) -> ApiServices:
    services: ApiServices = request.app.state.services
    return services


Services = Annotated[ApiServices, Depends(_services)]
_bearer = HTTPBearer(auto_error=False, description="an API key: ctxstream keys create TENANT")


async def _authenticated(
    services: Services,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    secret = credentials.credentials if credentials is not None else None
    return await services.auth.caller(secret)


Authenticated = Annotated[Caller, Depends(_authenticated)]


async def _read_slot(services: Services, caller: Authenticated) -> AsyncIterator[None]:
    """A read slot of the caller's tenant, held while the route runs (429 when none is free)."""
    with services.budgets.reads.holding(caller.tenant):
        yield


ReadSlot = Depends(_read_slot)
"""What a route that reads a session holds (``HTTP_TENANT_MAX_READS``, ``HTTP_MAX_READS``)."""
