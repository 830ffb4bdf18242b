"""What a replay asks for, checked before anything connects: target, sessions, start. Pure.

:func:`replay_request` turns the arguments of :meth:`ctxstream.Client.replay`
into a :class:`ReplayRequest` or refuses them with an
:class:`~ctxstream.errors.InvalidArgumentError` whose message starts with the
argument it names (``target_prefix: ...``, ``sessions[1]: ...``,
``from_offset: ...``).

The target is another deployment's topic prefix: a replay into the live
prefix would write into the live `projections` topic, so it is refused. Where
a replay starts reads as a subscription's start does
(:func:`ctxstream.subscription_request.start_at`), except that giving neither
`from_offset` nor `from_time` means from the beginning (``from_offset=0``):
a replay of what comes next would replay nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ctxstream.errors import InvalidArgumentError
from ctxstream.subscription_request import (
    OffsetArgument,
    StartAt,
    TimeArgument,
    checked_sessions,
    start_at,
)
from schemas.kafka.settings import TOPIC_PREFIX_PATTERN
from schemas.keys import SessionKey

_TOPIC_PREFIX: Final = re.compile(TOPIC_PREFIX_PATTERN)


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    """A valid replay: the target prefix, the sessions to fold (None: all) and where to start."""

    target_prefix: str
    sessions: frozenset[SessionKey] | None
    start: StartAt


def replay_request(
    target_prefix: str,
    *,
    live_prefix: str,
    sessions: Iterable[str] | None = None,
    from_offset: OffsetArgument = None,
    from_time: TimeArgument = None,
) -> ReplayRequest:
    """The request these arguments of :meth:`ctxstream.Client.replay` make.

    `live_prefix` is the deployment replayed: the target may not be it.

    Raises:
        InvalidArgumentError: An argument is refused; the message starts with its name.
    """
    if from_offset is not None and from_time is not None:
        raise InvalidArgumentError(
            "from_offset, from_time: give one of them (or neither, from the beginning)"
        )
    if from_offset is None and from_time is None:
        from_offset = 0
    return ReplayRequest(
        target_prefix=checked_target_prefix(target_prefix, live_prefix),
        sessions=checked_sessions(sessions, when_none="replays every session"),
        start=start_at(from_offset, from_time),
    )


def checked_target_prefix(target_prefix: object, live_prefix: str) -> str:
    """`target_prefix` as a topic prefix other than `live_prefix`.

    Raises:
        InvalidArgumentError: It is not one; the message starts with ``target_prefix:``.
    """
    if not isinstance(target_prefix, str):
        raise InvalidArgumentError(
            f"target_prefix: expected a string, got {type(target_prefix).__name__}"
        )
    if not _TOPIC_PREFIX.match(target_prefix):
        raise InvalidArgumentError(
            f"target_prefix: {target_prefix[:120]!r} is not a topic prefix "
            "(1 to 100 of A-Z a-z 0-9 . _ -)"
        )
    if target_prefix == live_prefix:
        raise InvalidArgumentError(
            f"target_prefix: {target_prefix!r} is the live deployment's own prefix; "
            "a replay writes into another namespace"
        )
    return target_prefix
