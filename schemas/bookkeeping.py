"""What every bookkeeping record of the pipeline is: author ``ctxstream``, nothing else. Pure.

Deletion records (:mod:`schemas.deletion_mark`) and memory records
(:mod:`schemas.memory_mark`) carry only their mark under ``customMetadata.ctxstream``:
no content, not partial, no actions.

Example: ``bare_problem(event_by_user, "deletion")`` ->
``"a deletion record's author is 'ctxstream', got 'user'"``.
"""

from __future__ import annotations

from typing import Final

from schemas.event import Event

#: The pipeline's namespace in custom metadata, and its bookkeeping author.
NAMESPACE: Final = "ctxstream"
AUTHOR: Final = "ctxstream"


def bare_problem(event: Event, kind: str) -> str | None:
    """Why `event` is no bare `kind` record (author, content, actions); None when it is one."""
    if event.author != AUTHOR:
        return f"a {kind} record's author is {AUTHOR!r}, got {event.author!r}"
    if event.content is not None or event.partial:
        return f"a {kind} record has no content and is not partial"
    if event.actions.model_dump(exclude_defaults=True, exclude_none=True):
        return f"a {kind} record carries no actions"
    return None
