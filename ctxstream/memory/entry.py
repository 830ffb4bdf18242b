"""A memory as a search returns it, in the shape of ADK's ``MemoryEntry``. Pure.

``content`` is a genai-shaped content with the memory's text as its one part,
``timestamp`` ADK's ``datetime.fromtimestamp(ts).isoformat()``
(:func:`projections.memory.memory_record.memory_timestamp`), ``id`` the event id.
What ADK keeps in ``custom_metadata`` is typed here: the session, the kind and
the search's score.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.memory.memory_record import MemoryKind
from schemas.event import Content


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One memory a search found.

    Attributes:
        id: The event id (ADK's ``MemoryEntry.id``; ``delete_memory`` names it).
        author: The event's author.
        timestamp: ADK's form: local, naive ISO 8601 of the event's timestamp.
        content: The role and the memory's text as one text part.
        kind: ``event``, or ``summary`` for a summary standing in for a range.
        session_key: The session the memory comes from.
        score: The search's score (``ctxstream/memory/README.md``, "Ranking").
    """

    id: str
    author: str
    timestamp: str
    content: Content
    kind: MemoryKind
    session_key: str
    score: float

    @property
    def text(self) -> str:
        """The memory's text (the content's one part)."""
        parts = self.content.parts or []
        return (parts[0].text or "") if parts else ""
