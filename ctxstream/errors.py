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


class ContextReadError(CtxstreamError):
    """A context or projection read that no projector answered; the message says why."""

    def __init__(self, *, session_key: str, reason: str) -> None:
        super().__init__(f"read of session {session_key!r}: {reason}")
        self.session_key, self.reason = session_key, reason


class ReadTimeoutError(ContextReadError, TimeoutError):
    """The session's partition had not folded ``min_offset`` within the read's ``timeout_s``.

    Retriable: the projector may be behind (a backlog, a restart); read again
    later, or with a longer timeout. Also a ``TimeoutError``.
    """

    retriable: ClassVar[bool] = True


class NoPartitionOwnerError(ContextReadError):
    """No projector serves reads of the session's partition (none claimed it, none answered).

    Retriable: during a rebalance or a restart the partition has no owner for
    a moment. A deployment whose projector runs on the faust engine, which
    serves no reads, never has one.
    """

    retriable: ClassVar[bool] = True

    def __init__(self, *, session_key: str, partition: int | None, reason: str) -> None:
        where = f"partition {partition}" if partition is not None else "its partition"
        super().__init__(
            session_key=session_key, reason=f"no projector serves reads of {where}: {reason}"
        )
        self.partition = partition


class SessionNotFoundError(ContextReadError, LookupError):
    """The session has no records where the read was answered: none was appended, or not yet.

    A context, projection, ``expand`` or ``rewind`` read is answered from the
    projector's fold as far as it has gone; a read right after an append
    that does not pass the append's offset as ``min_offset`` may come before
    the fold reached it and be refused so. With ``as_of``: the session had no
    record up to that offset. Not retriable as it is.
    """


class SummaryNotFoundError(ContextReadError, LookupError):
    """``expand`` named no summary of the session: no live event has the id, or it is no summary.

    Not retriable as it is; a summary appended a moment ago is found once the
    projector has folded it (pass the offset its append returned as ``min_offset``).
    """

    def __init__(self, *, session_key: str, summary_event_id: str, reason: str) -> None:
        super().__init__(session_key=session_key, reason=reason)
        self.summary_event_id = summary_event_id


class InvocationNotFoundError(ContextReadError, LookupError):
    """``rewind`` named an invocation no stored event of the session has (reference §10).

    Nothing was appended. An invocation appended a moment ago is found once
    the projector has folded it.
    """

    def __init__(self, *, session_key: str, invocation_id: str, reason: str) -> None:
        super().__init__(session_key=session_key, reason=reason)
        self.invocation_id = invocation_id


class TopicCreationError(CtxstreamError):
    """The broker refused to create a topic a command writes to; the message says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OverBudgetError(CtxstreamError):
    """A call refused because its tenant (or the server) is at one of its budgets.

    Retriable after ``retry_after_s``: the HTTP API answers it 429 with
    ``Retry-After``. The reason names the budget and the setting that sets it.
    """

    retriable: ClassVar[bool] = True

    def __init__(self, retry_after_s: float, reason: str, *, budget: str = "") -> None:
        """Refused for `reason`; retry after `retry_after_s`.

        `budget` names the budget for counting: the setting that sets it
        (``HTTP_TENANT_MAX_READS``), or ``projector-reads`` for a projector's reads.
        """
        super().__init__(reason)
        self.retry_after_s, self.reason, self.budget = retry_after_s, reason, budget


class SessionOverSizeCapError(CtxstreamError):
    """An append to a session the projector refuses records of: it is over ``SESSION_MAX_BYTES``.

    Not retriable: the session takes no more records; start a new one (a fork
    of it, or a fresh session).
    """

    def __init__(self, session_key: str) -> None:
        super().__init__(
            f"session {session_key!r} is over its size cap (SESSION_MAX_BYTES): the projector "
            "refuses its records; append to a new session"
        )
        self.session_key = session_key


class ReadModelUnavailableError(CtxstreamError):
    """The SQL read model cannot answer: its database is unreachable, or the schema lacks it.

    Retriable when the database is down; a schema that was never migrated needs
    ``ctxstream db migrate`` (the message says which). The HTTP API answers it 503.
    """

    retriable: ClassVar[bool] = True
