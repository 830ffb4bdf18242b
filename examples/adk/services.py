"""ADK's service registry in Python: ``ctxstream://`` session and memory services.

The same registrations as ``services.yaml`` (ADK loads both, this file last: its factories
win), with the services imported only when a ``ctxstream://`` URI is used. ADK imports this
file as the module ``services`` from the folder ``adk web``/``adk api_server`` was given, or
from the agent's folder for ``adk run``.
"""

from __future__ import annotations

from typing import Any

from google.adk.cli.service_registry import get_service_registry
from google.adk.memory.base_memory_service import BaseMemoryService
from google.adk.sessions.base_session_service import BaseSessionService


def ctxstream_session_service(uri: str, **kwargs: Any) -> BaseSessionService:
    """The ctxstream session service for `uri` (ADK passes ``agents_dir``: ignored)."""
    from ctxstream.adk import SessionService

    service: BaseSessionService = SessionService(uri, **kwargs)
    return service


def ctxstream_memory_service(uri: str, **kwargs: Any) -> BaseMemoryService:
    """The ctxstream memory service for `uri` (ADK passes ``agents_dir``: ignored)."""
    from ctxstream.adk import MemoryService

    return MemoryService(uri, **kwargs)


get_service_registry().register_session_service("ctxstream", ctxstream_session_service)
get_service_registry().register_memory_service("ctxstream", ctxstream_memory_service)
