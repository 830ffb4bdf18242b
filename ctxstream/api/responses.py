"""Which error answers each route gives, for its OpenAPI ``responses``: one table for all.

Every :data:`~ctxstream.api.errors.ErrorCode` has a description here
(:data:`ERROR_DESCRIPTIONS`); its status is :data:`~ctxstream.api.errors.ERROR_STATUS`'s.
A route names the codes it can answer (:data:`APPEND_ERRORS`, :data:`READ_ERRORS`, ...)
and :func:`error_responses` turns them into its ``responses``: one entry per status,
an :class:`~ctxstream.api.errors.ErrorBody`, with one named example per code
(``examples.<code>``), so a generated client, and the test that checks the document
against what the app answers, see which codes share a status. The two codes no
route answers (``not-found``: no route matched; ``method-not-allowed``: another
method's route did) are the document's shared :data:`UNROUTED_RESPONSES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ctxstream.api.errors import ERROR_STATUS, ErrorBody, ErrorCode

ERROR_DESCRIPTIONS: Final[Mapping[ErrorCode, str]] = {
    "invalid-json": "the body is not JSON",
    "unauthorized": "no API key, or a wrong or revoked one",
    "forbidden": "the key's tenant does not own the session or tenant",
    "not-found": "no such route (a trailing slash included)",
    "session-not-found": "the session has no records, or was deleted (yet: pass the offset an "
    "append returned as min_offset to wait for it)",
    "invocation-not-found": "the rewind names an invocation the session never had",
    "summary-not-found": "no live summary event of the session has this id",
    "method-not-allowed": "the route takes another method",
    "session-over-size-cap": "the session is over its size cap (SESSION_MAX_BYTES)",
    "too-large": "the body is over its limit (HTTP_MAX_BODY_BYTES, HTTP_MAX_BATCH_BYTES), "
    "or the batch over HTTP_MAX_BATCH_EVENTS",
    "invalid-argument": "a bad session key, parameter, event or body field",
    "over-budget": "a budget of the tenant or the server is spent; the reason names its setting",
    "internal": "a bug of the server (its log says why)",
    "read-failed": "the projector could not read the session (a quarantined session)",
    "broker-unavailable": "the broker could not be reached, or did not answer",
    "unavailable": "no projector serves the session's partition, a topic is missing, the "
    "keys cannot be checked, or the SQL read model is not configured (CTXSTREAM_POSTGRES_DSN) "
    "or cannot be read",
    "timeout": "the projector (or the read model's sink) had not reached min_offset (or as_of) "
    "within timeout_s",
}
_HEADERS: Final[Mapping[ErrorCode, dict[str, Any]]] = {
    "over-budget": {
        "Retry-After": {
            "description": "whole seconds to wait before sending again (at least 1)",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
    "unauthorized": {
        "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}},
    },
}

#: What every route may answer: the key check, the budgets, the server itself.
EVERY_ROUTE: Final[tuple[ErrorCode, ...]] = (
    "unauthorized",
    "forbidden",
    "invalid-argument",
    "over-budget",
    "internal",
    "unavailable",
    "broker-unavailable",
)
#: What a route reading its own JSON body adds.
_BODY: Final[tuple[ErrorCode, ...]] = ("invalid-json", "too-large")
#: What a read of the session's projection adds.
_READ: Final[tuple[ErrorCode, ...]] = ("session-not-found", "read-failed", "timeout")

APPEND_ERRORS: Final = (*EVERY_ROUTE, *_BODY, "session-over-size-cap")
READ_ERRORS: Final = (*EVERY_ROUTE, *_READ)
EXPAND_ERRORS: Final = (*READ_ERRORS, "summary-not-found")
REWIND_ERRORS: Final = (*APPEND_ERRORS, *_READ, "invocation-not-found")
FORK_ERRORS: Final = (*EVERY_ROUTE, *_BODY, "read-failed", "timeout")
SUBSCRIBE_ERRORS: Final = EVERY_ROUTE
LIST_ERRORS: Final = EVERY_ROUTE
HISTORY_ERRORS: Final = (*EVERY_ROUTE, "session-not-found", "timeout")


def error_responses(codes: Iterable[ErrorCode]) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of `codes`: per status, an ErrorBody with an example per code."""
    responses: dict[int | str, dict[str, Any]] = {}
    for code in dict.fromkeys(codes):
        entry = responses.setdefault(
            ERROR_STATUS[code],
            {"model": ErrorBody, "description": "", "content": {"application/json": {}}},
        )
        entry["description"] = "; ".join(
            part for part in (entry["description"], f"{code}: {ERROR_DESCRIPTIONS[code]}") if part
        )
        examples = entry["content"]["application/json"].setdefault("examples", {})
        examples[code] = {
            "summary": ERROR_DESCRIPTIONS[code],
            "value": {"error": code, "reason": ERROR_DESCRIPTIONS[code]},
        }
        if code in _HEADERS:
            entry.setdefault("headers", {}).update(_HEADERS[code])
    return responses


#: The answers of a request no route takes, as the document's shared ``components.responses``.
UNROUTED_RESPONSES: Final[Mapping[str, ErrorCode]] = {
    "NoSuchRoute": "not-found",
    "MethodNotAllowed": "method-not-allowed",
}


def unrouted_components() -> dict[str, Any]:
    """``components.responses`` of the :data:`UNROUTED_RESPONSES`, each an ErrorBody example."""
    return {
        name: {
            "description": f"{code}: {ERROR_DESCRIPTIONS[code]}",
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/ErrorBody"},
                    "examples": {
                        code: {"value": {"error": code, "reason": ERROR_DESCRIPTIONS[code]}}
                    },
                }
            },
        }
        for name, code in UNROUTED_RESPONSES.items()
    }
