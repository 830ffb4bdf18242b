"""An envelope together with the offset it was read at."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.envelope import Envelope
from schemas.keys import Offset


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """An `events` record as the core sees it: its log position and its envelope.

    The offset orders a session's events (one session is one partition), and
    it makes redelivery detectable: a fold ignores offsets it has applied.

    A record a fork inherited (:mod:`projections.fold.fork`) belongs to an earlier
    session of the fork's line, named by its envelope: its `offset` is then
    its place in the fork's inherited history, counted back from the fork
    (negative, below every offset of the fork's own records), and
    `origin_offset` is where it is on its own session's partition.
    """

    offset: Offset
    envelope: Envelope
    origin_offset: Offset | None = None
