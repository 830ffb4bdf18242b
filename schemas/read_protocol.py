"""The wire contract of context reads, shared by the worker's endpoint and the client. Pure.

A native worker's read endpoint (:mod:`streams.reads.web`) serves
``/sessions/{session_key}/`` ``context``, ``projection``, ``expand``,
``rewind-delta``, ``history-start`` (GET) and ``stored-events`` (POST); the
session key is one percent-encoded path segment (:func:`read_path`). With
``min_offset`` an answer waits until the session's partition has folded
that record (read-your-writes); with ``as_of``, the contents are those right
after it (time travel). A read is answered with 200 and one of the models
below, or refused with the status of its :data:`RefusalKind` and a
:class:`ReadRefusal`. Every route requires a bearer credential derived from
the read secret (:mod:`schemas.read_secret`). The routes, their parameters
and answers: ``schemas/README.md``, "The read protocol".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, Self
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.event import MAX_ID_CHARS, Content, Event
from schemas.json_bounds import INT64_MAX

ReadKind = Literal[
    "context",
    "projection",
    "expand",
    "rewind-delta",
    "history-start",
    "stored-events",
    "write-verdicts",
]
"""What a read asks for: the assembled contents, the projection's snapshot, a summary's events,
the state delta a rewind carries, where the session's history lies on its partition, which
events it stored already, what the fold made of conditional records."""

RefusalKind = Literal[
    "not-owner",
    "timeout",
    "invalid-session-key",
    "invalid-parameter",
    "unreadable",
    "session-not-found",
    "summary-not-found",
    "invocation-not-found",
    "busy",
    "unauthorized",
]
"""Why a read was not answered.

``not-owner``: this worker does not own the session's partition (the body
names the owner when the worker knows it): ask the owner. ``timeout``: the
partition had not folded ``min_offset`` within ``timeout_s``.
``invalid-session-key``, ``invalid-parameter``: the request is wrong.
``unreadable``: the session's state cannot be read (a quarantined session).
``session-not-found``: the projection holds no record of the session at the
offset the answer is of (its partition's committed position; for ``as_of``,
that offset): none was appended, or the fold has not reached it yet (a read
right after an append passes the append's offset as ``min_offset``).
``history-start`` never refuses so: it answers ``-1`` offsets (a fork asks it
whether its new session is still empty).
``summary-not-found``: the session has no live event with the ``expand``'s
``summary_id``, or that event is not a summary. ``invocation-not-found``: no
stored event of the session has the ``rewind-delta``'s invocation id (ADK's
rewind refuses it, reference §10). ``busy``: the worker's heavy-read budget
(``as_of``, ``rewind-delta`` and history reads at once) stayed full for the
read's ``timeout_s``: ask again after ``retry_after_s``. ``unauthorized``:
the request did not carry the read credential (:class:`schemas.read_secret.ReadKeys`).
"""

#: The HTTP status of each refusal (421: Misdirected Request).
REFUSAL_STATUS: Final[Mapping[RefusalKind, int]] = {
    "not-owner": 421,
    "timeout": 504,
    "invalid-session-key": 422,
    "invalid-parameter": 400,
    "unreadable": 500,
    "session-not-found": 404,
    "summary-not-found": 404,
    "invocation-not-found": 404,
    "busy": 429,
    "unauthorized": 401,
}
#: The longest a read may ask to wait for its partition.
MAX_READ_WAIT_S: Final = 300.0
#: How long a read waits when it does not say.
DEFAULT_READ_WAIT_S: Final = 10.0
#: The most events one ``expand`` page holds, and how many it holds when the read does not say.
MAX_PAGE_SIZE: Final = 1_000
DEFAULT_PAGE_SIZE: Final = 100
#: The most events one ``stored-events`` read asks about (~330 KB of ids and digests at most).
MAX_STORED_EVENTS_ASKED: Final = 1_000


class ProjectionQuery(BaseModel):
    """The query parameters of a projection read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_offset: int | None = Field(default=None, ge=0, le=INT64_MAX)
    """Answer only once the session's partition has folded the record at this offset."""
    timeout_s: float = Field(default=DEFAULT_READ_WAIT_S, gt=0, le=MAX_READ_WAIT_S)
    """How long to wait for the partition (restored, committed, past ``min_offset``)."""

    def awaited(self) -> tuple[str, int] | None:
        """The parameter naming the offset the partition must have folded first, and its value."""
        return None if self.min_offset is None else ("min_offset", self.min_offset)


class ContextQuery(ProjectionQuery):
    """The query parameters of a context read: whom the contents are for, and the wait."""

    agent: str | None = Field(default=None, max_length=1_000)
    """The agent the contents are for; None: the one ADK's router runs next (next_agent)."""
    branch: str | None = Field(default=None, max_length=1_000)
    """The invocation branch (dot-separated); None: none."""
    include_contents: Literal["default", "none"] = "default"
    """``default``: the whole history; ``none``: the current turn only."""
    as_of: int | None = Field(default=None, ge=0, le=INT64_MAX)
    """Time travel: the contents right after the record at this offset (waited for)."""

    @model_validator(mode="after")
    def _one_offset(self) -> Self:
        if self.as_of is not None and self.min_offset is not None:
            raise ValueError("as_of: not with min_offset (an as_of read waits for its offset)")
        return self

    def awaited(self) -> tuple[str, int] | None:
        """``as_of`` when the read travels in time, else ``min_offset`` (if given)."""
        return ("as_of", self.as_of) if self.as_of is not None else super().awaited()


class ExpandQuery(ProjectionQuery):
    """The query parameters of an ``expand`` read: which summary, which page, and the wait."""

    summary_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    """The id of the summary event whose covered events are asked for."""
    page_size: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    """At most this many events in the page."""
    page_token: str | None = Field(default=None, pattern=r"^[0-9]{1,19}$")
    """The previous page's ``next_page_token``; None: the first page."""


class RewindQuery(ProjectionQuery):
    """The query parameters of a ``rewind-delta`` read: the invocation to annul, and the wait."""

    before_invocation_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    """The invocation the rewind annuls, with everything after it."""


class SessionAnswer(BaseModel):
    """What every answer about a session starts with: the session it is about."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_key: str


class RewindDelta(SessionAnswer):
    """The state delta ADK's rewind carries (reference §10), as of the session's last record."""

    last_offset: int
    """The offset of the last record the projection had applied when it answered."""
    state_delta: dict[str, Any]
    """Restores the session's own keys to before the invocation (``None``: the key goes)."""


class HistoryStart(SessionAnswer):
    """Where a session's history lies on its `events` partition, as its committed state says."""

    first_offset: int
    """The offset of the session's first applied record (for a fork, its fork record's);
    ``-1``: none, or not known (a header stored before first offsets were)."""
    last_offset: int
    """The offset of the last record the projection applied (``-1``: none)."""


class WriteVerdicts(SessionAnswer):
    """What the fold made of a session's conditional records, as of `last_offset`.

    Never refused for a session deleted or without records: a writer asks it after its own
    append (projections/README.md, "Conditional records").
    """

    last_offset: int
    """The offset of the last record the projection applied (``-1``: none)."""
    writer_offset: int
    """The offset of the session's last writer record (``-1``: none, or deleted since)."""
    refused: list[int]
    """The newest refused conditional records' offsets, ascending."""
    refused_floor: int
    """Refusals at or below this offset may be missing from `refused` (``-1``: none is)."""
    deleted: bool
    """The session has no live incarnation: deleted since its last record applied, or none
    was ever applied."""


class ContextAnswer(SessionAnswer):
    """The assembled contents of a session, as of the last record its projection applied."""

    last_offset: int
    """The offset of the last record the projection applied (``-1``: none)."""
    contents: list[Content]
    """What a model request would carry, each as genai's JSON."""


class ExpandedPage(SessionAnswer):
    """A page of the raw events a summary covers, and where the next page starts."""

    summary_id: str
    last_offset: int
    """The offset of the last record the session's projection had applied when it answered."""
    events: list[Event]
    """The session's live raw events the summary covers, stream order."""
    next_page_token: str | None = None
    """Pass it as ``page_token`` for the next page; None: this is the last page."""


class StoredEventsAsk(BaseModel):
    """The body of a ``stored-events`` read: the events an append is about to write."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    digests: dict[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)], str] = Field(
        max_length=MAX_STORED_EVENTS_ASKED
    )
    """Event id -> :func:`schemas.event_digest.event_digest` of the event about to be written."""


class StoredEvents(SessionAnswer):
    """The asked events the session has stored already, equal: the fold would drop a copy."""

    last_offset: int
    """The offset of the last record the projection applied (``-1``: none)."""
    stored: dict[str, int]
    """Event id -> the offset of the stored record, for the asked ids whose event is equal."""


class ReadRefusal(BaseModel):
    """Why a read was not answered, and where to ask instead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error: RefusalKind
    reason: str
    partition: int | None = None
    """The session's `events` partition, when the key was valid."""
    owner: str | None = None
    """``host:port`` of the partition's owner, when the refusing worker knows another one."""
    retry_after_s: int | None = Field(default=None, ge=0)
    """Seconds to wait before asking again (a ``busy`` refusal; also its ``Retry-After``)."""


def read_path(session_key: str, kind: ReadKind) -> str:
    """The path of a read: ``/sessions/<key, one percent-encoded segment>/<kind>``."""
    return f"/sessions/{quote(session_key, safe='')}/{kind}"


def page_token(offset: int) -> str:
    """The ``next_page_token`` of a page whose last event is at `offset` (opaque to callers)."""
    return str(offset)


def page_token_offset(token: str | None) -> int:
    """The offset the page before `token` ended at; ``-1`` for the first page."""
    return -1 if token is None else int(token)


def query_parameters(query: ProjectionQuery) -> dict[str, str]:
    """`query` as URL parameters; unset ones left out."""
    return {name: str(value) for name, value in query.model_dump(exclude_none=True).items()}
