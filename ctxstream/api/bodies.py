"""Request bodies: read within a byte bound, parsed as JSON by orjson, checked for their shape.

The routes that take a body read it here rather than through FastAPI's own
parsing, so that a body over ``HTTP_MAX_BODY_BYTES`` is refused (413) before it
is held whole, whether it announces its length or comes in chunks, and so that
events reach :meth:`ctxstream.Client.append` as the JSON the caller sent: the
client checks them with the projector's own decoder, which is the one rule
for what an event is (strict numbers, nesting and size bounds).
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from fastapi import Request
from pydantic import BaseModel, ValidationError

from ctxstream.api.errors import ApiError, field_errors

ModelT = TypeVar("ModelT", bound=BaseModel)


async def json_body(request: Request, *, max_bytes: int) -> Any:
    """The request's body, parsed.

    Raises:
        ApiError: ``too-large`` over `max_bytes`, ``invalid-json`` when it is not JSON.
    """
    return parsed(await body_bytes(request, max_bytes=max_bytes))


async def body_bytes(
    request: Request, *, max_bytes: int, setting: str = "HTTP_MAX_BODY_BYTES"
) -> bytes:
    """The request's body, read as it comes, refused as soon as it is over `max_bytes`.

    Raises:
        ApiError: ``too-large`` over `max_bytes`, naming the limit and its `setting`.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(
            "too-large",
            f"the body has {declared} bytes, at most {max_bytes} ({setting})",
            budget=setting,
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            reason = f"the body is over {max_bytes} bytes ({setting})"
            raise ApiError("too-large", reason, budget=setting)
        chunks.append(chunk)
    return b"".join(chunks)


def parsed(body: bytes) -> Any:
    """`body` parsed as JSON.

    Raises:
        ApiError: ``invalid-json`` when it is not JSON.
    """
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiError("invalid-json", f"the body is not JSON: {exc}") from exc


def json_object(body: Any, *, name: str) -> dict[str, Any]:
    """`body` when it is a JSON object.

    Raises:
        ApiError: ``invalid-argument`` naming `name`.
    """
    if not isinstance(body, dict):
        raise ApiError("invalid-argument", f"{name}: expected a JSON object")
    return body


def validated(model: type[ModelT], body: Any) -> ModelT:
    """`body` as `model`.

    Raises:
        ApiError: ``invalid-argument`` naming each refused field.
    """
    try:
        return model.model_validate(json_object(body, name="body"))
    except ValidationError as exc:
        raise ApiError("invalid-argument", field_errors(exc.errors(include_url=False))) from exc
