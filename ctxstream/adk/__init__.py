"""ctxstream as google-adk's session and memory service: ``ctxstream/adk/README.md``.

The one package that imports ``google.adk`` (the ``adk`` extra); ``import ctxstream``
never needs it. The services are imported when first named, so the pure helpers
(:mod:`ctxstream.adk.uri`, :mod:`ctxstream.adk.ids`) load without ADK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxstream.adk.memory_service import MemoryService
    from ctxstream.adk.session_service import SessionService

__all__ = ["MemoryService", "SessionService"]


def __getattr__(name: str) -> Any:
    if name == "SessionService":
        from ctxstream.adk.session_service import SessionService  # lazy: it imports ADK

        return SessionService
    if name == "MemoryService":
        from ctxstream.adk.memory_service import MemoryService  # lazy: it imports ADK

        return MemoryService
    raise AttributeError(f"module 'ctxstream.adk' has no attribute {name!r}")
