"""What the HTTP API's routes take and answer, as JSON, and how /docs shows it.

Events go in as ADK's camelCase JSON (the :class:`~schemas.event.Event`
schema), contents come out as genai dumps them (camelCase, ``None`` fields
left out), and snapshots as the `projections` topic holds them: the same
shapes :class:`ctxstream.Client` and ``ctxstream tail`` use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from ctxstream.api.responses import (
    APPEND_ERRORS,
    EVERY_ROUTE,
    EXPAND_ERRORS,
    FORK_ERRORS,
    HISTORY_ERRORS,
    LIST_ERRORS,
    READ_ERRORS,
    REWIND_ERRORS,
    SUBSCRIBE_ERRORS,
    error_responses,
    unrouted_components,
)
from schemas.event import MAX_ID_CHARS, Content, Event
from schemas.json_bounds import INT64_MAX

_COMPONENTS = "#/components/schemas/{model}"


class Appended(BaseModel):
    """The offset of the record an event was appended as."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    offset: int
    """Pass it as ``min_offset`` to read the session with this event in it."""


class AppendedEvent(Appended):
    """The answer of an append of one event: its offset, and whether it was a duplicate."""

    duplicate: bool
    """The session had stored this event already (same id, every field equal): nothing was
    written, and `offset` is the stored record's. A copy sent before the first was folded is
    written (false, a new offset) and dropped by the fold."""


class AppendedMany(BaseModel):
    """The offsets of the records a batch's events were appended as, in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    offsets: list[int]
    duplicates: list[bool]
    """For each event, in order: :attr:`AppendedEvent.duplicate`."""


class EventBatch(BaseModel):
    """The body of ``events:batch``: events of one session, appended in order, all or none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: list[Event]


class RewindRequest(BaseModel):
    """The body of ``rewind``: the invocation to annul, with everything after it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    before_invocation_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    min_offset: int | None = Field(default=None, ge=0)
    """The offset of the session's last append the rewind must see (read-your-writes)."""


class ForkRequest(BaseModel):
    """The body of ``fork``: where the fork leaves its source, and the new session's key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at_offset: int = Field(ge=0, le=INT64_MAX)
    """The source's last offset the fork keeps (an offset an append of the source returned)."""
    new_session_key: str = Field(min_length=1)
    """The new session, of the same tenant, without records yet."""


class ContextContents(BaseModel):
    """The contents a model request of the session would carry, as the core assembles them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    contents: list[Content]


class ExpandedEvents(BaseModel):
    """A page of the raw events a summary covers, and where the next page starts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: list[Event]
    next_page_token: str | None = None
    """Pass it as ``page_token`` for the next page; left out on the last page."""


#: The error answers of each kind of route, for /docs (:mod:`ctxstream.api.responses`).
ERROR_RESPONSES: Final = error_responses(EVERY_ROUTE)
APPEND_RESPONSES: Final = error_responses(APPEND_ERRORS)
READ_RESPONSES: Final = error_responses(READ_ERRORS)
EXPAND_RESPONSES: Final = error_responses(EXPAND_ERRORS)
REWIND_RESPONSES: Final = error_responses(REWIND_ERRORS)
FORK_RESPONSES: Final = error_responses(FORK_ERRORS)
DELETE_RESPONSES: Final = error_responses(EVERY_ROUTE)
SUBSCRIBE_RESPONSES: Final = error_responses(SUBSCRIBE_ERRORS)
LIST_RESPONSES: Final = error_responses(LIST_ERRORS)
HISTORY_RESPONSES: Final = error_responses(HISTORY_ERRORS)

#: The answer of a subscription, for /docs.
SUBSCRIBE_RESPONSE: dict[str, Any] = {
    "description": "server-sent events: 'snapshot' (data: {partition, offset, snapshot}; "
    "a deleted session: 'deleted', data: {partition, offset, deleted: its key}; "
    "id: the position after it, <partition>:<offset>,...), a last 'error' (data: an ErrorBody) "
    "when the stream fails, and ': ping' comments while it is idle",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


def json_body_of(model: type[BaseModel]) -> dict[str, Any]:
    """An ``openapi_extra`` saying a route's JSON body is a `model` (read by the route itself)."""
    reference = {"$ref": _COMPONENTS.format(model=model.__name__)}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": reference}}}
    }


def documented(app: FastAPI, models: Sequence[type[BaseModel]]) -> Callable[[], dict[str, Any]]:
    """`app`'s OpenAPI document with `models` (and what they name) among its components.

    The routes that read their body themselves name it with :func:`json_body_of`;
    FastAPI lists only the models its own parameters use, so these are added; so
    are the answers of a request no route takes (``components.responses``).
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            _, definitions = models_json_schema(
                [(model, "validation") for model in models], ref_template=_COMPONENTS
            )
            components = document.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            for name, schema in definitions.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            components.setdefault("responses", {}).update(unrouted_components())
            app.openapi_schema = document
        return app.openapi_schema

    return openapi
