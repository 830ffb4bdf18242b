"""A read's arguments checked into its query, and an answer checked to be the session's. Pure.

A refused argument raises :class:`~ctxstream.errors.InvalidArgumentError` named as the
caller named it: ``_checked(ExpandQuery, {"summary_id": "summary_event_id"}, ...)``
refuses an empty id as ``summary_event_id: ...``. An answer that names another session
than the one asked for is refused (:func:`of_session`), never used.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TypeVar

from pydantic import ValidationError

from ctxstream.errors import ContextReadError, InvalidArgumentError
from schemas.errors import InvalidSessionKeyError
from schemas.keys import SessionKey, validate_session_key
from schemas.log_text import shown
from schemas.read_protocol import ContextQuery, ProjectionQuery

logger = logging.getLogger(__name__)

QueryT = TypeVar("QueryT", bound=ProjectionQuery)
AnswerT = TypeVar("AnswerT")


def checked_key(session_key: str) -> SessionKey:
    """`session_key`, once it is a session key.

    Raises:
        InvalidArgumentError: It is not; the message starts with ``session_key:``.
    """
    try:
        return validate_session_key(session_key)
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"session_key: {exc}") from exc


def checked(
    model: type[QueryT], renamed: Mapping[str, str] | None = None, **arguments: object
) -> QueryT:
    """`arguments` as a query; a refused one raises, named as the caller named it (`renamed`).

    Raises:
        InvalidArgumentError: An argument is refused; the message starts with its name.
    """
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        name = ".".join(str((renamed or {}).get(str(part), part)) for part in error["loc"])
        raise InvalidArgumentError(f"{name}: {error['msg']}") from exc


def context_query(
    session_key: str, renamed: Mapping[str, str], arguments: Mapping[str, object]
) -> tuple[SessionKey, ContextQuery]:
    """The session's key and the context query of `arguments` (named as `renamed` says)."""
    return checked_key(session_key), checked(ContextQuery, renamed, **arguments)


def of_session(asked: SessionKey, named: str, answer: AnswerT) -> AnswerT:
    """`answer`, once it names the session asked for.

    Raises:
        ContextReadError: It names another session (a worker's bug, or not a worker).
    """
    if named != asked:
        logger.warning("answer refused session=%s named=%s", shown(asked), shown(named))
        raise ContextReadError(
            session_key=asked, reason="the answer names another session; it was not used"
        )
    return answer
