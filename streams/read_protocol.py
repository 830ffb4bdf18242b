"""The wire contract of context reads, shared by the worker's endpoint and the client. Pure.

Two routes on a native worker's read endpoint (:mod:`streams.read_web`)::

    GET /sessions/{session_key}/context?agent=&branch=&include_contents=default|none
                                       &min_offset=N&timeout_s=S
    GET /sessions/{session_key}/projection?min_offset=N&timeout_s=S

The session key is one path segment, percent-encoded as :func:`read_path`
writes it (``acme%2Fsupport%2Fu1%2Fs1``); it is validated as every key is
(:func:`schemas.keys.parse_session_key`). With ``min_offset`` (the offset
``append`` returned), the answer waits until the session's partition has
folded that record: read-your-writes.

A read is answered with 200 and a :class:`ContextAnswer` or a
``ProjectionSnapshot``, or refused with the status of its
:data:`RefusalKind` and a :class:`ReadRefusal` saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from schemas.event import Content
from schemas.json_bounds import INT64_MAX

ReadKind = Literal["context", "projection"]
"""What a read asks for: the assembled contents, or the projection's snapshot."""

RefusalKind = Literal[
    "not-owner", "timeout", "invalid-session-key", "invalid-parameter", "unreadable"
]
"""Why a read was not answered.

``not-owner``: this worker does not own the session's partition (the body
names the owner when the worker knows it): ask the owner. ``timeout``: the
partition had not folded ``min_offset`` within ``timeout_s``.
``invalid-session-key``, ``invalid-parameter``: the request is wrong.
``unreadable``: the session's state cannot be read (a quarantined session).
"""

#: The HTTP status of each refusal (421: Misdirected Request).
REFUSAL_STATUS: Final[Mapping[RefusalKind, int]] = {
    "not-owner": 421,
    "timeout": 504,
    "invalid-session-key": 422,
    "invalid-parameter": 400,
    "unreadable": 500,
}
#: The longest a read may ask to wait for its partition.
MAX_READ_WAIT_S: Final = 300.0
#: How long a read waits when it does not say.
DEFAULT_READ_WAIT_S: Final = 10.0


class ProjectionQuery(BaseModel):
    """The query parameters of a projection read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_offset: int | None = Field(default=None, ge=0, le=INT64_MAX)
    """Answer only once the session's partition has folded the record at this offset."""
    timeout_s: float = Field(default=DEFAULT_READ_WAIT_S, gt=0, le=MAX_READ_WAIT_S)
    """How long to wait for the partition (restored, committed, past ``min_offset``)."""


class ContextQuery(ProjectionQuery):
    """The query parameters of a context read: whom the contents are for, and the wait."""

    agent: str | None = Field(default=None, max_length=1_000)
    """The agent the contents are for; None: the agent the session's snapshots describe."""
    branch: str | None = Field(default=None, max_length=1_000)
    """The invocation branch (dot-separated); None: none."""
    include_contents: Literal["default", "none"] = "default"
    """``default``: the whole history; ``none``: the current turn only."""


class ContextAnswer(BaseModel):
    """The assembled contents of a session, as of the last record its projection applied."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_key: str
    last_offset: int
    """The offset of the last record the projection applied (``-1``: none)."""
    contents: list[Content]
    """What a model request would carry, each as genai's JSON."""


class ReadRefusal(BaseModel):
    """Why a read was not answered, and where to ask instead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error: RefusalKind
    reason: str
    partition: int | None = None
    """The session's `events` partition, when the key was valid."""
    owner: str | None = None
    """``host:port`` of the partition's owner, when the refusing worker knows another one."""


def read_path(session_key: str, kind: ReadKind) -> str:
    """The path of a read: ``/sessions/<key, one percent-encoded segment>/<kind>``."""
    return f"/sessions/{quote(session_key, safe='')}/{kind}"


def query_parameters(query: ProjectionQuery) -> dict[str, str]:
    """`query` as URL parameters; unset ones left out."""
    return {name: str(value) for name, value in query.model_dump(exclude_none=True).items()}
