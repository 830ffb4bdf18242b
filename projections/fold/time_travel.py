"""A session's projection as it stood right after one offset: what ``as_of`` reads answer. Pure.

Folding again, with :func:`~projections.fold.projection.project`, the records a
projection applied at or below the offset, from an empty projection that serves
the same view, gives the projection the session had right after that offset
(the records the fold passed over changed nothing the refold reads). An offset
at or past the last one is the projection itself; one before a released record
raises :class:`~projections.retention.retained_vector.NeedsHistory`. The refold
asks `stop` before each record and ends with :class:`ReadStopped` once it says
so. Cost: O(records up to the offset). More: projections/README.md, "Reads of
the past".

Example (offset:event): a projection of ``3:a 5:b 9:c`` as of offset 6 is
the fold of ``3:a 5:b``, whose last offset is 5; as of 2 it is empty.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

from projections.fold.projection import (
    SessionProjection,
    configured_projection,
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
    start = configured_projection(projection)
    forked_at = projection.forked_at
    if forked_at is not None:
        if offset < forked_at:
            return start
        start = inheriting(start)
    applied = itertools.takewhile(lambda record: record.offset <= offset, projection.log.records)
    folded = project(projection.session_key, unless_stopped(applied, stop), start)
    known = projection.conditions  # the refusals are no records: kept up to `offset`
    refused = tuple(at for at in known.refused if at <= offset)
    conditions = replace(folded.conditions, refused=refused, refused_floor=known.refused_floor)
    return replace(folded, forked_at=forked_at, conditions=conditions)
