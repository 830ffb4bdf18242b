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
    """

    offset: Offset
    envelope: Envelope
