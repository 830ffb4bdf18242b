"""A digest of an event that is equal for equal events: what a duplicate lookup compares. Pure.

The fold drops an event equal to one the session stored (same id and every
field, :func:`projections.fold.session_log.is_stored`). To ask whether an event
about to be appended is such a copy, the client sends its digest rather
than the event: SHA-256 of the event's every field (unset ones at their
defaults, extras included) as JSON with sorted keys. Equal digests mean
equal events; the one way equal events get different digests is a
free-form number written once as ``1`` and once as ``1.0``, and such a copy
is then appended and dropped by the fold, as if it had not been looked up.

Example: ``event_digest(Event(author="u", timestamp=1.0))`` -> 64 hex digits.
"""

from __future__ import annotations

import hashlib

import orjson

from schemas.event import Event


def event_digest(event: Event) -> str:
    """SHA-256 (hex) of `event`'s every field as sorted JSON."""
    fields = event.model_dump(mode="json", by_alias=True)
    return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()
