"""Records only the pipeline itself writes, which an append of a caller's events refuses. Pure.

The pipeline keeps its bookkeeping on `events` as events of author
``ctxstream`` whose custom metadata carries its own namespace
(``customMetadata.ctxstream``): fork records (:mod:`projections.fold.fork`) and
refusals of compaction requests (:mod:`projections.compaction.summary_request`). The
projector folds them as the pipeline's word, so a caller must not write them:
a fork goes through ``Client.fork`` (which checks its source first), a
refusal comes from the summarizer or the projector. The one entry a caller's
event may carry there is a summary's ``compaction_request_id``, which says
which request the summary answers.

Example: ``{"author": "user", "customMetadata": {"ctxstream": {"fork_of": ...}}}``
-> ``"customMetadata.ctxstream: ..."``; ``{"author": "user"}`` -> None.
"""

from __future__ import annotations

from projections.event_kinds import METADATA_NAMESPACE, REFUSAL_AUTHOR, REQUEST_ID_KEY
from schemas.event import Event


def bookkeeping_refusal(event: Event) -> str | None:
    """Why `event` is one only the pipeline may append (one line), None when a caller may."""
    if event.author == REFUSAL_AUTHOR:
        return (
            f"author: {REFUSAL_AUTHOR!r} is the pipeline's own bookkeeping author; "
            "start a fork with the fork call"
        )
    ours = (event.custom_metadata or {}).get(METADATA_NAMESPACE)
    if ours is None:
        return None
    if (
        event.actions.compaction is not None
        and isinstance(ours, dict)
        and set(ours) <= {REQUEST_ID_KEY}
    ):
        return None
    return (
        f"customMetadata.{METADATA_NAMESPACE}: the pipeline's own namespace (fork records, "
        f"refusals); a caller's event may carry only a summary's {REQUEST_ID_KEY} there"
    )
