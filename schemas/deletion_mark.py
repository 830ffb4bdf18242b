"""The mark of a deletion record: the pipeline's bookkeeping event that deletes its session.

A deletion is an event on `events` like a fork record: author ``ctxstream``,
no content, no actions, and ``true`` under ``ctxstream.session_deleted`` in its
custom metadata::

    {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
     "customMetadata": {"ctxstream": {"session_deleted": true}}}

The envelope's validation refuses a record that names the key in any other
shape (:func:`deletion_problem`), so a malformed deletion is dead-lettered
when it is decoded. What folding it does: projections/README.md, "Deletion".
"""

from __future__ import annotations

from typing import Final

from schemas.bookkeeping import AUTHOR, NAMESPACE, bare_problem, flag_problem
from schemas.event import Event

#: The key of the mark under the pipeline's custom-metadata namespace.
DELETION_KEY: Final = "session_deleted"
#: The pipeline's namespace and author (the same as :mod:`projections.event_kinds`'s).


def names_deletion(event: Event) -> bool:
    """Whether `event` names the deletion key at all (well formed or not)."""
    ours = (event.custom_metadata or {}).get(NAMESPACE)
    return isinstance(ours, dict) and DELETION_KEY in ours


def deletion_problem(event: Event) -> str | None:
    """Why `event`, which names the deletion key, is no deletion record; None when it is one.

    Example: ``{"ctxstream": {"session_deleted": "yes"}}`` ->
    ``"ctxstream.session_deleted must be true, got str"``.
    """
    return flag_problem(event, DELETION_KEY, "deletion") or bare_problem(event, "deletion")


def is_deletion(event: Event) -> bool:
    """Whether `event` is a well-formed deletion record."""
    return names_deletion(event) and deletion_problem(event) is None


def deletion_event(*, event_id: str, timestamp: float) -> Event:
    """The deletion record's event, as the module docstring shows it."""
    return Event(
        id=event_id,
        author=AUTHOR,
        timestamp=timestamp,
        custom_metadata={NAMESPACE: {DELETION_KEY: True}},
    )
