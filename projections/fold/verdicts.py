"""A projection's word on conditional records, as the ``write-verdicts`` read answers it. Pure.

A writer that appended a conditional record at offset ``X`` reads this once the
projection passed ``X`` and judges it with :func:`refusal_verdict`
(:mod:`projections.fold.conditions`): refused, applied, or unknown below the floor.
``deleted``: the session has no live incarnation, either deleted (and nothing
applied since) or never given one (no record applied, not a fork).

Example: writer offset 7, refused ``(9,)`` -> ``WriteVerdicts(writer_offset=7,
refused=[9], refused_floor=-1, deleted=False, ...)``.
"""

from __future__ import annotations

from projections.fold.projection import SessionProjection
from schemas.read_protocol import WriteVerdicts


def has_incarnation(projection: SessionProjection) -> bool:
    """Whether the session lives: not deleted, and some record was applied (or it is a fork)."""
    if projection.deleted_at is not None:
        return False
    return len(projection.log.records) > 0 or projection.forked_at is not None


def write_verdicts(projection: SessionProjection) -> WriteVerdicts:
    """The ``write-verdicts`` answer of `projection`."""
    conditions = projection.conditions
    return WriteVerdicts(
        session_key=projection.session_key,
        last_offset=projection.last_offset,
        writer_offset=conditions.writer_offset,
        refused=list(conditions.refused),
        refused_floor=conditions.refused_floor,
        deleted=not has_incarnation(projection),
    )
