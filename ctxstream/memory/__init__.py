"""Long-term memory: search a target schema's memories (ctxstream/memory/README.md)."""

from ctxstream.memory.entry import MemoryEntry
from ctxstream.memory.store import MemoryStore

__all__ = ["MemoryEntry", "MemoryStore"]
