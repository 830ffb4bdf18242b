"""What subscribers read about a session: its projection as a bounded snapshot. Pure.

The snapshot carries counters, the compaction boundary and a fingerprint of
the assembled context, never the context itself, so its size does not grow
with the session. The projector passes each session's previous
:class:`~projections.contents.context_digest.ContextDigest` so that the fingerprint
costs the new events' assembly, not the whole context's
(:func:`snapshot_with_digest`); the value is the same either way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from projections.contents.context_digest import (
    ContentPieces,
    ContextDigest,
    DigestedContext,
    content_digests,
    digest_context,
)
from projections.event_kinds import summary_request_id
from projections.fold.projection import SessionProjection
from schemas.event import Content
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import CompactionBoundary, ProjectionSnapshot, TokenUsage


def context_fingerprint(contents: Sequence[Content]) -> str:
    """SHA-256 (hex) of the SHA-256 digests of each content's canonical JSON, concatenated.

    Canonical: genai's camelCase JSON of each content, keys sorted, compact
    separators, non-ASCII kept. Equal contents give equal fingerprints, so a
    subscriber can tell whether the context changed without reading it.
    """
    return hashlib.sha256(b"".join(content_digests(contents))).hexdigest()


def compaction_boundary(summary: LoggedEvent) -> CompactionBoundary:
    """The boundary a summary record sets."""
    event = summary.envelope.event
    compaction = event.actions.compaction
    if compaction is None:
        raise ValueError(f"event {event.id!r} at offset {summary.offset} is not a summary event")
    return CompactionBoundary(
        summary_event_id=event.id,
        summary_offset=summary.offset if summary.origin_offset is None else summary.origin_offset,
        inherited_from=None if summary.origin_offset is None else summary.envelope.session_key,
        start_timestamp=compaction.start_timestamp,
        end_timestamp=compaction.end_timestamp,
        request_id=summary_request_id(event),
    )


def to_snapshot(projection: SessionProjection) -> ProjectionSnapshot:
    """The snapshot published on the `projections` topic. O(visible context)."""
    return snapshot_with_digest(projection)[0]


def snapshot_with_digest(
    projection: SessionProjection, previous: ContextDigest | None = None
) -> tuple[ProjectionSnapshot, ContextDigest | None]:
    """The snapshot, and the context digest to pass with the session's next one.

    `previous` is what the session's last call returned (None: none). The
    snapshot equals :func:`to_snapshot`'s whatever `previous` is; with the
    digest of an earlier snapshot of the session it costs O(visible) integer
    work plus assembling the events since, when those only extend the context
    (:mod:`projections.contents.context_digest`).
    """
    snapshot, context = snapshot_carrying(projection, previous)
    return snapshot, context.digest


def snapshot_carrying(
    projection: SessionProjection,
    previous: ContextDigest | None = None,
    pieces: ContentPieces | None = None,
) -> tuple[ProjectionSnapshot, DigestedContext]:
    """The snapshot, and the digest and content digests to pass with the session's next one.

    As :func:`snapshot_with_digest`, and `pieces` (what the last call's
    context carried) spares re-serializing the contents of events met again.
    """
    context = digest_context(projection.view, previous, pieces)
    boundary = projection.summaries.boundary
    tokens = projection.tokens
    in_flight = projection.in_flight
    snapshot = ProjectionSnapshot(
        tenant=parse_session_key(projection.session_key).tenant,
        session_key=projection.session_key,
        last_offset=projection.last_offset,
        boundary=compaction_boundary(boundary) if boundary is not None else None,
        invocations_total=projection.invocations.total,
        invocations_since_compaction=projection.invocations.since_compaction,
        token_usage=TokenUsage(
            last_prompt_tokens=tokens.last_prompt_tokens,
            total_prompt_tokens=tokens.total_prompt_tokens,
            total_candidates_tokens=tokens.total_candidates_tokens,
        ),
        context_items=context.items,
        context_fingerprint=context.fingerprint,
        in_flight_request_id=in_flight.request_id if in_flight is not None else None,
    )
    return snapshot, context
