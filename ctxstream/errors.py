"""What the front door raises: one clear message, never a traceback's worth.

Refused input is a :class:`InvalidArgumentError` (a ``ValueError``) whose
message starts with the argument it names; nothing was sent or read then. A
cluster the client cannot use is a :class:`BrokerUnavailableError` (retriable:
the same call may work once the broker is up) or a :class:`TopicMissingError`
(an operator creates the deployment's topics first).
"""

from __future__ import annotations

from typing import ClassVar

from schemas.errors import CtxstreamError


class InvalidArgumentError(CtxstreamError, ValueError):
    """An argument the client refuses; the message starts with its name, e.g. ``tenant: ...``."""


class InvalidEventError(InvalidArgumentError):
    """An event or session key the pipeline would refuse; the message names the field."""


class BrokerUnavailableError(CtxstreamError):
    """The cluster did not answer in time, or refused the connection.

    Retriable: a shell backs off and calls again; a command prints the message
    and exits non-zero.
    """

    retriable: ClassVar[bool] = True

    def __init__(self, *, bootstrap: str, reason: str) -> None:
        super().__init__(f"broker {bootstrap} unavailable: {reason}")
        self.bootstrap, self.reason = bootstrap, reason


class TopicMissingError(CtxstreamError):
    """A topic of the deployment does not exist (``ctxstream topics create`` makes them)."""

    def __init__(self, topic: str) -> None:
        super().__init__(
            f"topic {topic!r} does not exist: create the deployment's topics with "
            "'ctxstream topics create' (CTXSTREAM_TOPIC_PREFIX names the deployment)"
        )
        self.topic = topic
