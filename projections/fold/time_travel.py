"""A session's projection as it stood right after one offset: what ``as_of`` reads answer. Pure.

A projection keeps the records it applied, in stream order
(``log.records``). Folding again, with the core's
:func:`~projections.fold.projection.project`, those at or below the offset, from
an empty projection that serves the same view, gives the projection the
session had right after its record at that offset. The records the fold
passed over (redelivered ones, refusals, partial events, copies of stored
events, summaries of an answered request) are not needed: each changed only
the last offset and the request bookkeeping, never what the next record's
fold or the contents read, so the refold applies exactly the records the
fold applied, in the same order, and reaches the same log and view.

An offset at or past the projection's last one is the projection itself. A
projection that released its oldest records (:mod:`projections.retention.log_retention`)
raises :class:`~projections.retention.retained_vector.NeedsHistory` for any earlier
offset: the caller refolds the session's history from `events` whole and
asks again (:meth:`streams.reads.sessions.SessionReads.read` does).

Cost: O(records up to the offset), the refold's. The refold asks `stop`
before each record and ends with :class:`ReadStopped` once it says so (a
read whose client went away); it never changes the result otherwise.

Example (offset:event): a projection of ``3:a 5:b 9:c`` as of offset 6 is
the fold of ``3:a 5:b``, whose last offset is 5; as of 2 it is empty.

A fork (:mod:`projections.fold.fork`) had nothing before its fork record; from
its fork record on, its history starts with what it inherited (held at
negative offsets), so the refold starts as the fork's fold does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

from projections.fold.projection import (
    SessionProjection,
    configured_view_request,
    empty_projection,
    inheriting,
    project,
)

T = TypeVar("T")

StopCheck = Callable[[], bool]
"""Asked between the items of a long computation: True once its result is no longer wanted."""


class ReadStopped(Exception):
    """A computation stopped because its :data:`StopCheck` said so (its read was abandoned)."""


def never() -> bool:
    """The :data:`StopCheck` of a computation nobody stops."""
    return False


def unless_stopped(items: Iterable[T], stop: StopCheck) -> Iterator[T]:
    """`items`, asking `stop` before each.

    Raises:
        ReadStopped: `stop` said so.
    """
    for item in items:
        if stop():
            raise ReadStopped("stopped: its read was abandoned")
        yield item


def projection_as_of(
    projection: SessionProjection, offset: int, stop: StopCheck = never
) -> SessionProjection:
    """`projection` as it stood right after the record at `offset` of the session's partition.

    Raises:
        NeedsHistory: `projection` released records the refold needs.
        ReadStopped: `stop` said so before the refold ended.
    """
    if offset >= projection.last_offset:
        return projection
    start = empty_projection(projection.session_key, configured_view_request(projection))
    forked_at = projection.forked_at
    if forked_at is not None:
        if offset < forked_at:
            return start
        start = inheriting(start)
    applied = itertools.takewhile(lambda record: record.offset <= offset, projection.log.records)
    folded = project(projection.session_key, unless_stopped(applied, stop), start)
    return replace(folded, forked_at=forked_at)
