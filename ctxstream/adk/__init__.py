"""ctxstream as google-adk's session and memory service (the ``adk`` extra; README.md here)."""

from ctxstream.adk.memory_service import MemoryService

__all__ = ["MemoryService"]
