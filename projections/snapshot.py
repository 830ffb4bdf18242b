"""What subscribers read about a session: its projection as a bounded snapshot. Pure.

The snapshot carries counters, the compaction boundary and a fingerprint of
the assembled context, never the context itself, so its size does not grow
with the session.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Final

from pydantic import TypeAdapter

from projections.projection import SessionProjection, context_contents
from projections.summary_request import summary_request_id
from schemas.event import Content
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import CompactionBoundary, ProjectionSnapshot, TokenUsage

#: Dumps a whole list of contents in one call, each exactly as
#: :func:`~schemas.event.content_to_json` dumps it (the same serializer).
_CONTENTS: Final = TypeAdapter(list[Content])


def context_fingerprint(contents: Sequence[Content]) -> str:
    """SHA-256 (hex) of the canonical JSON of `contents`.

    Canonical: genai's camelCase JSON of each content, keys sorted, compact
    separators, non-ASCII kept. Equal contents give equal fingerprints, so a
    subscriber can tell whether the context changed without reading it.
    """
    canonical = json.dumps(
        _CONTENTS.dump_python(list(contents), mode="json", by_alias=True, exclude_none=True),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


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
    contents = context_contents(projection)
    boundary = projection.summaries.boundary
    tokens = projection.tokens
    in_flight = projection.in_flight
    return ProjectionSnapshot(
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
        context_items=len(contents),
        context_fingerprint=context_fingerprint(contents),
        in_flight_request_id=in_flight.request_id if in_flight is not None else None,
    )
