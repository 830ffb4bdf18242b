"""What kind of record an event is: a summary, a rewind, a refusal. Pure: no I/O, no clock.

The core tells events apart by what they carry, never by who sent them: a
summary sets ``actions.compaction``; a rewind names an invocation in
``actions.rewind_before_invocation_id``; the pipeline's own bookkeeping
(refusals, fork records: :mod:`projections.fold.fork`, deletion and memory
records: :mod:`schemas.deletion_mark`, :mod:`schemas.memory_mark`, creation
records: :mod:`schemas.creation_mark`, whose shape the envelope checks) and the request a
summary answers sit under ``customMetadata.ctxstream``. This module is the one
place that knows those marks; the writers
(:mod:`projections.compaction.summary_request`, :mod:`projections.fold.fork`)
use its keys.

Example: ``{"customMetadata": {"ctxstream": {"compaction_request_id": "9f2c"}}}``
on a summary -> :func:`summary_request_id` ``"9f2c"``; an ADK summary without
that entry -> None.
"""

from __future__ import annotations

from typing import Final

from schemas.creation_mark import is_creation
from schemas.deletion_mark import DELETION_KEY, is_deletion
from schemas.event import Event
from schemas.memory_mark import is_memory_mark

__all__ = [
    "DELETION_KEY",
    "METADATA_NAMESPACE",
    "REFUSAL_AUTHOR",
    "REFUSED_KEY",
    "REQUEST_ID_KEY",
    "is_creation",
    "is_deletion",
    "is_memory_mark",
    "is_rewind",
    "is_summary",
    "refused_request_id",
    "summary_request_id",
]

#: The pipeline's own key in an event's ``custom_metadata``.
METADATA_NAMESPACE: Final = "ctxstream"
#: Under the namespace, on a summary: the compaction request it answers.
REQUEST_ID_KEY: Final = "compaction_request_id"
#: Under the namespace, on a refusal: the compaction request given up on.
REFUSED_KEY: Final = "compaction_refused"
#: Author of the pipeline's bookkeeping events (refusals, fork records).
REFUSAL_AUTHOR: Final = "ctxstream"


def is_summary(event: Event) -> bool:
    """Whether `event` is a summary (compaction) event.

    The schema makes ``start_timestamp``, ``end_timestamp`` and
    ``compacted_content`` required, so a set ``actions.compaction`` is enough.
    """
    return event.actions.compaction is not None


def is_rewind(event: Event) -> bool:
    """Whether `event` is a rewind: it names an invocation to annul with everything after it.

    Example: ``rewind_before_invocation_id="inv2"`` -> True; ``None`` or ``""`` -> False.
    """
    return bool(event.actions.rewind_before_invocation_id)


def summary_request_id(event: Event) -> str | None:
    """The id of the compaction request `event` answers, None when it names none.

    Only summary events (``actions.compaction`` set) answer requests; a
    non-string or empty id counts as none.
    """
    if event.actions.compaction is None:
        return None
    return _named_request(event, REQUEST_ID_KEY)


def refused_request_id(event: Event) -> str | None:
    """The id of the compaction request `event` refuses, None when it is no refusal.

    A refusal is the pipeline's own bookkeeping record on `events`: an event
    without content or compaction whose custom metadata names a request under
    ``ctxstream.compaction_refused``. The summarizer appends one when it gives
    up on a request for good, the projector when a request stayed unanswered
    for its last attempt. Folding it ends the wait on that request, so the
    session decides again over a new window; it is never part of the context.

    Example: ``{"author": "ctxstream", "customMetadata": {"ctxstream":
    {"compaction_refused": "9f2c", "reason": "rejected"}}}`` -> ``"9f2c"``.
    """
    if event.content is not None or event.actions.compaction is not None:
        return None
    return _named_request(event, REFUSED_KEY)


def _named_request(event: Event, key: str) -> str | None:
    """The request id under `key` of the pipeline's namespace; a non-string or empty one is none."""
    if not event.custom_metadata:
        return None
    ours = event.custom_metadata.get(METADATA_NAMESPACE)
    if not isinstance(ours, dict):
        return None
    request_id = ours.get(key)
    return request_id if isinstance(request_id, str) and request_id else None
