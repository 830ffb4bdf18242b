"""The errors ctxstream raises on purpose, each saying whether a retry helps."""

from __future__ import annotations

from typing import ClassVar, Final

from schemas.log_text import shown

#: Characters of a decode reason kept, after escaping; the rest is cut.
MAX_DECODE_REASON_CHARS: Final = 1_000
_CUT: Final = "..."


class CtxstreamError(Exception):
    """Base class for every error ctxstream raises on purpose."""

    retriable: ClassVar[bool] = False


class DecodeError(CtxstreamError):
    """Bytes from a topic could not become a valid record; the message says why.

    Never retriable: the same bytes fail the same way. A shell sends the record
    to the dead-letter topic with this reason and moves on. The reason may
    quote the record, so it is kept as one escaped line of at most
    :data:`MAX_DECODE_REASON_CHARS` characters (no raw newline, terminal
    escape or bidi control), safe for a log line as it is.
    """

    def __init__(self, reason: str) -> None:
        escaped = shown(reason, MAX_DECODE_REASON_CHARS)
        if len(escaped) > MAX_DECODE_REASON_CHARS:  # escapes made it longer
            escaped = escaped[: MAX_DECODE_REASON_CHARS - len(_CUT)] + _CUT
        super().__init__(escaped)
        self.reason = escaped


class InvalidSessionKeyError(CtxstreamError, ValueError):
    """A session key is not of the form ``tenant/app/user/session``.

    A ``ValueError`` too, so that pydantic validators turn it into a validation
    error whose message is this one.
    """

    def __init__(self, key: str, problem: str) -> None:
        shown = key if len(key) <= 80 else key[:77] + "..."
        super().__init__(f"invalid session key {shown!r}: {problem}")
        self.key, self.problem = key, problem


class TenantMismatchError(CtxstreamError, ValueError):
    """A record names a tenant that is not its session key's tenant part.

    A ``ValueError`` too, so that pydantic validators turn it into a validation
    error whose message is this one.
    """

    def __init__(self, *, tenant: str, session_key: str, owner: str) -> None:
        super().__init__(
            f"tenant {tenant!r} does not own session {session_key!r} (its tenant part is {owner!r})"
        )
        self.tenant, self.session_key, self.owner = tenant, session_key, owner


class SessionMismatchError(CtxstreamError):
    """An event was applied to the projection of another session (a bug)."""

    def __init__(self, *, projection_key: str, event_key: str) -> None:
        super().__init__(f"event of {event_key!r} in projection {projection_key!r}")
        self.projection_key, self.event_key = projection_key, event_key


class TopicError(CtxstreamError):
    """A topic the deployment needs is missing, or is not as it must be, or was refused.

    Not retriable as it is: someone has to create or fix the topic first
    (``ctxstream topics create``).
    """

    def __init__(self, topic: str, problem: str) -> None:
        super().__init__(f"topic {topic!r} {problem}")
        self.topic, self.problem = topic, problem
