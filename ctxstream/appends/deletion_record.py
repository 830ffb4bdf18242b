"""The deletion record a session's key is given to end the session, checked first. Pure.

``Client.delete_session(session_key)`` appends one record to the session
(:mod:`schemas.deletion_mark`): author ``ctxstream``, no content, ``true`` under
``ctxstream.session_deleted``. The projector folding it drops the session's
state; later events start the session afresh (projections/README.md,
"Deletion"). Id and timestamp are the caller's, so a test pins them.

Example::

    deletion_record("acme/app/u1/s1", event_id="9f...", timestamp=1733130010.0)
    -> {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
        "customMetadata": {"ctxstream": {"session_deleted": true}}}
"""

from __future__ import annotations

from ctxstream.errors import InvalidArgumentError
from schemas.deletion_mark import deletion_event
from schemas.errors import InvalidSessionKeyError
from schemas.event import Event
from schemas.keys import SessionKey, parse_session_key


def checked_session_key(session_key: object) -> SessionKey:
    """`session_key` when it is a session key.

    Raises:
        InvalidArgumentError: It is not a string, or not a session key; the
            message starts with ``session_key:``.
    """
    if not isinstance(session_key, str):
        raise InvalidArgumentError(
            f"session_key: expected a string, got {type(session_key).__name__}"
        )
    try:
        return parse_session_key(session_key).key
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"session_key: {exc}") from exc


def deletion_record(session_key: object, *, event_id: str, timestamp: float) -> Event:
    """The record that deletes `session_key` (checked as :func:`checked_session_key`).

    Raises:
        InvalidArgumentError: As :func:`checked_session_key`.
    """
    checked_session_key(session_key)
    return deletion_event(event_id=event_id, timestamp=timestamp)
