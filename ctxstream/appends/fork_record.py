"""The fork record a new session starts with, checked before anything is sent. Pure.

``Client.fork(session_key, at_offset, new_session_key)`` appends one record
to the new session (:mod:`projections.fold.fork`): author ``ctxstream``, no
content, naming the source session and the offset. Both sessions must be
of one tenant, and differ; the offset is one the source's partition holds
(an offset ``append`` returned for the source, typically). The record also
names where the source's history starts on its partition (``first_offset``,
which ``Client.fork`` learns from the source's owner), so that the worker
folding the fork reads the source from there.

Example::

    fork_record("acme/app/u1/s1", 41, "acme/app/u1/s2", first_offset=12,
                event_id="9f...", timestamp=1733130010.0)
    -> {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
        "customMetadata": {"ctxstream": {"fork_of":
            {"session_key": "acme/app/u1/s1", "offset": 41, "first_offset": 12}}}}
"""

from __future__ import annotations

from dataclasses import replace

from ctxstream.errors import InvalidArgumentError
from projections.fold.fork import ForkSource, fork_event
from schemas.errors import InvalidSessionKeyError
from schemas.event import Event
from schemas.json_bounds import INT64_MAX
from schemas.keys import Offset, SessionKey, parse_session_key


def checked_fork(session_key: object, at_offset: object, new_session_key: object) -> ForkSource:
    """The source of the fork the arguments ask for.

    Raises:
        InvalidArgumentError: A key is not a session key, the keys are of two
            tenants or the same, or `at_offset` is not a Kafka offset; the
            message starts with the argument's name.
    """
    source = _key("session_key", session_key)
    new = _key("new_session_key", new_session_key)
    if parse_session_key(source).tenant != parse_session_key(new).tenant:
        raise InvalidArgumentError(
            "new_session_key: a fork stays in its source's tenant "
            f"({parse_session_key(source).tenant!r})"
        )
    if source == new:
        raise InvalidArgumentError("new_session_key: the fork needs a session key of its own")
    if isinstance(at_offset, bool) or not isinstance(at_offset, int):
        raise InvalidArgumentError(
            f"at_offset: expected an integer, got {type(at_offset).__name__}"
        )
    if not 0 <= at_offset <= INT64_MAX:
        raise InvalidArgumentError(f"at_offset: {at_offset} is not a Kafka offset (0 or more)")
    return ForkSource(source, Offset(at_offset))


def fork_record(
    session_key: object,
    at_offset: object,
    new_session_key: object,
    *,
    first_offset: int | None = None,
    event_id: str,
    timestamp: float,
) -> Event:
    """The record that starts `new_session_key` as a fork (checked as :func:`checked_fork`).

    `first_offset`: where the source's history starts on its partition
    (None: not named; the fork is then read as an older record is).

    Raises:
        InvalidArgumentError: As :func:`checked_fork`; or `first_offset` is
            past `at_offset`: the source has no record up to it.
    """
    source = checked_fork(session_key, at_offset, new_session_key)
    if first_offset is not None:
        if not 0 <= first_offset <= source.offset:
            raise InvalidArgumentError(
                f"at_offset: {session_key!r} has no record up to offset {source.offset} "
                f"(its first is at {first_offset})"
            )
        source = replace(source, first_offset=Offset(first_offset))
    return fork_event(source, event_id=event_id, timestamp=timestamp)


def _key(name: str, value: object) -> SessionKey:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name}: expected a string, got {type(value).__name__}")
    try:
        return parse_session_key(value).key
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"{name}: {exc}") from exc
