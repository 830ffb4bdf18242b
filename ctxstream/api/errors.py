"""Every error the HTTP API answers: one JSON body, ``{"error": code, "reason": text}``.

Nothing else ever leaves as an error: FastAPI's validation errors, Starlette's
404 and 405, the client's exceptions and any bug are all turned into an
:class:`ErrorBody` with the status of its code (:data:`ERROR_STATUS`), and a
bug's traceback goes to the server's log, never to the caller. Reasons echo
only what the caller sent, escaped and bounded (:func:`schemas.log_text.shown`).

More in ``ctxstream/api/README.md`` (errors.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from aiokafka.errors import KafkaConnectionError, KafkaError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException

from ctxstream.api.key_store import KeyDirectoryUnavailableError
from ctxstream.errors import (
    BrokerUnavailableError,
    ContextReadError,
    InvalidArgumentError,
    InvocationNotFoundError,
    NoPartitionOwnerError,
    OverBudgetError,
    ReadModelUnavailableError,
    ReadTimeoutError,
    SessionNotFoundError,
    SessionOverSizeCapError,
    SummaryNotFoundError,
    TopicMissingError,
)
from schemas.codec import encode
from schemas.errors import CtxstreamError
from schemas.log_text import shown

logger = logging.getLogger(__name__)

ErrorCode = Literal[
    "invalid-json",
    "unauthorized",
    "forbidden",
    "not-found",
    "session-not-found",
    "invocation-not-found",
    "summary-not-found",
    "method-not-allowed",
    "session-over-size-cap",
    "too-large",
    "invalid-argument",
    "over-budget",
    "internal",
    "read-failed",
    "broker-unavailable",
    "unavailable",
    "timeout",
]
"""Why a request was not answered (the table above)."""

ERROR_STATUS: Final[Mapping[ErrorCode, int]] = {
    "invalid-json": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not-found": 404,
    "session-not-found": 404,
    "invocation-not-found": 404,
    "summary-not-found": 404,
    "method-not-allowed": 405,
    "session-over-size-cap": 409,
    "too-large": 413,
    "invalid-argument": 422,
    "over-budget": 429,
    "internal": 500,
    "read-failed": 502,
    "broker-unavailable": 503,
    "unavailable": 503,
    "timeout": 504,
}
#: Characters of a reason kept before escaping (it may quote the caller's input).
MAX_API_REASON_CHARS: Final = 1_000
_BEARER: Final = {"WWW-Authenticate": "Bearer"}
#: The request state's attribute naming the budget that refused the request, when one did.
REFUSED_BY: Final = "refused_by_budget"


class ErrorBody(BaseModel):
    """The body of every error answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error: ErrorCode
    reason: str


class ApiError(Exception):
    """An error answer to send: its code (and so its status) and its reason."""

    def __init__(
        self,
        code: ErrorCode,
        reason: str,
        *,
        retry_after_s: float | None = None,
        budget: str | None = None,
    ) -> None:
        """An answer `code` saying `reason`; `budget`: the limit that refused it, if one did."""
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, shown(reason, MAX_API_REASON_CHARS)
        self.retry_after_s, self.budget = retry_after_s, budget

    @property
    def body(self) -> ErrorBody:
        """What the caller reads."""
        return ErrorBody(error=self.code, reason=self.reason)

    def response(self) -> Response:
        """The JSON answer, with ``WWW-Authenticate`` on a 401 and ``Retry-After`` when known."""
        headers = dict(_BEARER) if self.code == "unauthorized" else {}
        if self.retry_after_s is not None:
            headers["Retry-After"] = str(retry_after_header(self.retry_after_s))
        return Response(
            encode(self.body),
            status_code=ERROR_STATUS[self.code],
            media_type="application/json",
            headers=headers,
        )


def retry_after_header(seconds: float) -> int:
    """``Retry-After`` of a wait of `seconds`: whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(seconds))


def api_error_of(exc: CtxstreamError | KafkaError) -> ApiError:
    """The answer to an exception of the client, the key directory or aiokafka."""
    match exc:
        case InvalidArgumentError():
            return ApiError("invalid-argument", str(exc))
        case OverBudgetError():
            return ApiError(
                "over-budget",
                exc.reason,
                retry_after_s=exc.retry_after_s,
                budget=exc.budget or None,
            )
        case SessionOverSizeCapError():
            return ApiError("session-over-size-cap", str(exc))
        case ReadTimeoutError():
            return ApiError("timeout", str(exc))
        case BrokerUnavailableError():
            return ApiError("broker-unavailable", str(exc))
        case KafkaConnectionError():
            return ApiError("broker-unavailable", f"the broker could not be reached: {exc}")
        case NoPartitionOwnerError() | TopicMissingError():
            return ApiError("unavailable", str(exc))
        case KeyDirectoryUnavailableError() | ReadModelUnavailableError():
            return ApiError("unavailable", str(exc))
        case SessionNotFoundError():
            return ApiError("session-not-found", str(exc))
        case InvocationNotFoundError():
            return ApiError("invocation-not-found", str(exc))
        case SummaryNotFoundError():
            return ApiError("summary-not-found", str(exc))
        case ContextReadError():
            return ApiError("read-failed", str(exc))
        case KafkaError():
            return ApiError("unavailable", f"the broker did not take the request: {exc!r}")
        case _:
            logger.error("unexpected error answered as internal: %r", exc)
            return ApiError("internal", "the server failed; its log says why")


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of `app` with an :class:`ErrorBody`."""

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)  # noqa: S101 (registered for ApiError only)
        return _answered(request, exc)

    async def client_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, CtxstreamError | KafkaError)  # noqa: S101 (registered for these)
        return _answered(request, api_error_of(exc))

    async def invalid_request(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)  # noqa: S101 (registered for it only)
        return request_error(exc).response()

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)  # noqa: S101 (registered for it only)
        return _http_error(exc).response()

    async def bug(request: Request, exc: Exception) -> Response:
        logger.error(
            "request failed method=%s path=%s",
            request.method,
            shown(request.url.path),
            exc_info=exc,
        )
        return ApiError("internal", "the server failed; its log says why").response()

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(CtxstreamError, client_error)
    app.add_exception_handler(KafkaError, client_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, bug)


def _answered(request: Request, error: ApiError) -> Response:
    """`error`'s answer; a refusal by a budget is noted on the request for the metrics."""
    if error.budget is not None:
        setattr(request.state, REFUSED_BY, error.budget)
    return error.response()


def request_error(exc: RequestValidationError) -> ApiError:
    """A refused parameter or body: 422 naming where, or 400 when the body is no JSON."""
    errors = exc.errors()
    if any(error.get("type") == "json_invalid" for error in errors):
        return ApiError("invalid-json", "the body is not JSON")
    return ApiError("invalid-argument", field_errors(errors) or "the request is not valid")


def field_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's errors as one reason: ``<where>: <what>`` for each, ``;``-separated."""
    return "; ".join(
        f"{'.'.join(str(part) for part in error.get('loc', ()))}: {error.get('msg', 'invalid')}"
        for error in errors
    )


def _http_error(exc: HTTPException) -> ApiError:
    match exc.status_code:
        case 404:
            return ApiError("not-found", "no such route; the routes are listed at /docs")
        case 405:
            return ApiError("method-not-allowed", "the route does not take this method")
        case 401:
            return ApiError("unauthorized", str(exc.detail))
        case 403:
            return ApiError("forbidden", str(exc.detail))
        case 413:
            return ApiError("too-large", str(exc.detail))
        case status if 400 <= status < 500:
            return ApiError("invalid-argument", str(exc.detail))
        case _:
            return ApiError("internal", "the server failed; its log says why")
