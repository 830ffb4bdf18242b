"""The rewind event a session appends to annul an invocation and what follows it. Pure.

ADK's ``Runner.rewind_async`` appends one event (reference §10): author ``"user"``, a
fresh invocation id ``e-<uuid>``, ``actions.rewindBeforeInvocationId`` naming the
invocation, and a ``stateDelta`` restoring the session's own keys
(:func:`projections.fold.state.rewind_state_delta`, computed by the session's owner).
Ids and timestamp are the caller's (the client's clock and uuids), so a test pins them.

Example::

    rewind_record("inv2", event_id="9f...", invocation_id="e-41...", timestamp=1733130010.0)
    -> {"id": "9f...", "invocationId": "e-41...", "author": "user",
        "timestamp": 1733130010.0,
        "actions": {"rewindBeforeInvocationId": "inv2", "stateDelta": {}}}
"""

from __future__ import annotations

from typing import Any

from ctxstream.errors import InvalidArgumentError
from schemas.event import MAX_ID_CHARS


def checked_invocation_id(before_invocation_id: object) -> str:
    """`before_invocation_id` when it can name an invocation.

    Raises:
        InvalidArgumentError: It is not a non-empty string of at most
            :data:`schemas.event.MAX_ID_CHARS` characters (no invocation id is
            longer); the message starts with ``before_invocation_id:``.
    """
    if not isinstance(before_invocation_id, str):
        raise InvalidArgumentError(
            f"before_invocation_id: expected a string, got {type(before_invocation_id).__name__}"
        )
    if not before_invocation_id:
        raise InvalidArgumentError("before_invocation_id: empty; name the invocation to annul")
    if len(before_invocation_id) > MAX_ID_CHARS:
        raise InvalidArgumentError(
            f"before_invocation_id: {len(before_invocation_id)} characters, "
            f"at most {MAX_ID_CHARS} (no invocation id is longer)"
        )
    return before_invocation_id


def rewind_record(
    before_invocation_id: object,
    *,
    event_id: str,
    invocation_id: str,
    timestamp: float,
    state_delta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The rewind event annulling `before_invocation_id`, as ADK's camelCase JSON.

    Raises:
        InvalidArgumentError: as :func:`checked_invocation_id`.
    """
    before_invocation_id = checked_invocation_id(before_invocation_id)
    return {
        "id": event_id,
        "invocationId": invocation_id,
        "author": "user",
        "timestamp": timestamp,
        "actions": {
            "rewindBeforeInvocationId": before_invocation_id,
            "stateDelta": dict(state_delta or {}),
        },
    }
