"""ctxstream as google-adk's session and memory service: ``ctxstream/adk/README.md``.

The one package that imports ``google.adk`` (the ``adk`` extra); ``import ctxstream``
never needs it. The services are imported when first named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxstream.adk.memory_service import MemoryService

__all__ = ["MemoryService"]


def __getattr__(name: str) -> Any:
    if name == "MemoryService":
        from ctxstream.adk.memory_service import MemoryService  # lazy: it imports ADK

        return MemoryService
    raise AttributeError(f"module 'ctxstream.adk' has no attribute {name!r}")
