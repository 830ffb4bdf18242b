"""A session's projection as it stood right after one offset: what ``as_of`` reads answer. Pure.

A projection keeps the records it applied, in stream order
(``log.records``). Folding again, with the core's
:func:`~projections.projection.project`, those at or below the offset, from
an empty projection that serves the same view, gives the projection the
session had right after its record at that offset. The records the fold
passed over (redelivered ones, refusals, partial events, copies of stored
events, summaries of an answered request) are not needed: each changed only
the last offset and the request bookkeeping, never what the next record's
fold or the contents read, so the refold applies exactly the records the
fold applied, in the same order, and reaches the same log and view.

An offset at or past the projection's last one is the projection itself. A
projection that released its oldest records (:mod:`projections.retention`)
raises :class:`~projections.retained_vector.NeedsHistory` for any earlier
offset: the caller refolds the session's history from `events` whole and
asks again (:meth:`streams.session_reads.SessionReads.read` does).

Cost: O(records up to the offset), the refold's.

Example (offset:event): a projection of ``3:a 5:b 9:c`` as of offset 6 is
the fold of ``3:a 5:b``, whose last offset is 5; as of 2 it is empty.

A fork (:mod:`projections.fork`) had nothing before its fork record; from
its fork record on, its history starts with what it inherited (held at
negative offsets), so the refold starts as the fork's fold does.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from projections.projection import SessionProjection, empty_projection, inheriting, project


def projection_as_of(projection: SessionProjection, offset: int) -> SessionProjection:
    """`projection` as it stood right after the record at `offset` of the session's partition.

    Raises:
        NeedsHistory: `projection` released records the refold needs.
    """
    if offset >= projection.last_offset:
        return projection
    start = empty_projection(projection.session_key, projection.view.request)
    forked_at = projection.forked_at
    if forked_at is not None:
        if offset < forked_at:
            return start
        start = inheriting(start)
    applied = itertools.takewhile(lambda record: record.offset <= offset, projection.log.records)
    return replace(project(projection.session_key, applied, start), forked_at=forked_at)
