"""A fork's starting projection: the records it inherits, folded once. Pure.

A fork (:mod:`projections.fold.fork`) starts from its source's records up to
the fork's offset. :func:`inherit` folds them into the fork's empty
projection, inline in the batch step or off the folding loop
(:mod:`streams.fork_preparation`); :func:`streams.batch.stored.rebuild_session`
starts from the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from projections.contents.context_digest import ContextDigest, digest_context
from projections.fold.projection import SessionProjection, apply, inheriting
from schemas.codec import encode
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings


@dataclass(frozen=True, slots=True)
class Inheritance:
    """A fork's inherited records folded into its starting projection (:func:`inherit`).

    `projection` is the new session's empty projection with every inherited
    record applied (its fork record not yet); `size` is their bytes, what the
    session's cache entry starts from; `digest` is its context's digest, so
    the fork's first snapshot assembles only what came since (O(context)
    otherwise, on the folding loop).
    """

    projection: SessionProjection
    size: int
    digest: ContextDigest | None = field(default=None, compare=False)


def _no_check() -> object:
    return None


def inherit(
    settings: ProjectorSettings,
    key: SessionKey,
    records: Sequence[LoggedEvent],
    between: Callable[[], object] = _no_check,
) -> Inheritance:
    """The fork `key`'s starting projection with its inherited `records` folded. Pure.

    O(records): the one fold of a fork's inheritance (and its context's
    digest), inline in the batch step or prepared off the folding loop
    (:mod:`streams.fork_preparation`), which passes `between` (called after
    each record) to pace itself.
    """
    projection = inheriting(settings.empty_projection_for(key))
    size = 0
    for record in records:
        between()
        try:
            projection = apply(projection, record)
        except Exception:  # noqa: BLE001, S112 - refused in its own session; refused again
            continue
        size += len(encode(record.envelope))
    return Inheritance(projection, size, digest_context(projection.view).digest)
