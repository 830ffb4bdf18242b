"""What the session catalog answers: pages of sessions and of stored events, as JSON models.

The same models are the Python API's answers (:class:`~ctxstream.sessions.catalog.
SessionCatalog`) and the HTTP API's bodies (``ctxstream/api/README.md``, app.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class PartitionPosition(BaseModel):
    """Up to where the read model is consistent on one partition of `events`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    partition: int
    next_offset: int
    """Every record of the partition below it is in the answer's read, none at or above it:
    an append acknowledged at (partition, offset) is in it once ``next_offset > offset``."""


class ListedSession(BaseModel):
    """One session of a listing, as the read model's ``session_index`` holds it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_key: str
    tenant: str
    app: str
    user_id: str
    session_id: str
    partition: int
    created: float | None
    """The event timestamp of the first record of the session's current incarnation."""
    last_activity: float
    """The event timestamp of the session's last record (the listing's order, newest first)."""
    last_offset: int


class SessionPage(BaseModel):
    """A page of a tenant's sessions, newest first; ``next_cursor`` continues it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sessions: list[ListedSession]
    next_cursor: str | None = None
    """Pass it as ``cursor`` for the next page; absent (None) on the last page."""
    consistent_as_of: list[PartitionPosition]


class StoredEvent(BaseModel):
    """One record of a session as the read model stores it (its ``events`` view)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    partition: int
    offset: int
    event_id: str
    invocation_id: str
    author: str
    timestamp: float
    status: str
    """What the fold made of it: live, masked, superseded, rewound, rewind, duplicate, ..."""
    lossy: bool
    """The event held NUL characters, stored as U+FFFD here; the record at (partition,
    offset) of `events` holds its exact bytes."""
    event: dict[str, Any]
    """The event as stored: ADK's camelCase JSON, the fields its producer set."""


class HistoryPage(BaseModel):
    """A page of a session's stored records in offset order; ``next_after`` continues it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: list[StoredEvent]
    next_after: int | None = None
    """Pass it as ``after`` for the next page; absent (None) on the last page."""
    consistent_as_of: list[PartitionPosition]
