"""Session lifecycle reads from the SQL read model: a tenant's sessions, a session's records.

:class:`SessionCatalog` pages them (``ctxstream/sessions/README.md``); the HTTP API serves it
at ``GET /v1/tenants/{tenant}/sessions`` and ``GET /v1/sessions/{key}/events``, the command
line as ``ctxstream sessions --sql`` and ``ctxstream history``.
"""

from ctxstream.sessions.catalog import SessionCatalog
from ctxstream.sessions.pages import (
    HistoryPage,
    ListedSession,
    PartitionPosition,
    SessionPage,
    StoredEvent,
)

__all__ = [
    "HistoryPage",
    "ListedSession",
    "PartitionPosition",
    "SessionCatalog",
    "SessionPage",
    "StoredEvent",
]
