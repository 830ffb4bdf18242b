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


def flag_problem(event: Event, key: str, kind: str) -> str | None:
    """Why `event`'s ``ctxstream`` metadata is not exactly ``{key: true}``; None when it is.

    Example: ``{"ctxstream": {"session_deleted": "yes"}}`` ->
    ``"ctxstream.session_deleted must be true, got str"``.
    """
    ours = (event.custom_metadata or {}).get(NAMESPACE)
    if not isinstance(ours, dict) or key not in ours:
        return f"it names no {NAMESPACE}.{key}"
    if ours[key] is not True:
        return f"{NAMESPACE}.{key} must be true, got {type(ours[key]).__name__}"
    if set(ours) != {key}:
        others = ", ".join(sorted(str(name) for name in ours if name != key))
        return f"a {kind} record names nothing else under {NAMESPACE} (it also names {others})"
    return None
