"""Timing headers: when a worker took, read and built what a record it writes answers. Pure.

The workers stamp the records that carry a compaction along (a request, the
summary that answers it, the snapshot that folds the summary) with a few
Kafka record headers, so that where the time of one compaction goes can be
measured from the records alone (``ctxstream bench compaction``, its hops).
A stamp is wall-clock seconds (``time.time()`` of the writing process) in
ASCII, microsecond precision; the record's own timestamp (CreateTime: when
the worker sent it inside its transaction) is the moment after the last
stamp. Nothing reads these headers to decide anything: they are figures,
never state, so exactly-once does not depend on them.

Example: ``stamp(TAKEN, 1764000000.25)`` is
``("ctxstream-taken", b"1764000000.250000")``, and
``stamped([("ctxstream-taken", b"1764000000.250000")], TAKEN)`` is
``1764000000.25``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

Header = tuple[str, bytes]
"""One Kafka record header, as aiokafka sends and returns it."""

#: When the worker took the record this one answers from its consumer: the
#: projector's batch holding the deciding event (on a request) or the summary
#: (on a snapshot), the summarizer's fetch holding the request (on a summary).
TAKEN: Final = "ctxstream-taken"
#: Summarizer: when the request's slice of `events` was read (the session's
#: turn, a read slot and the read itself behind it).
READ: Final = "ctxstream-read"
#: Summarizer: when the summary was built and handed to its partition's lane,
#: which sends it in the lane's next transaction.
BUILT: Final = "ctxstream-built"


def stamp(name: str, at: float) -> Header:
    """The header `name` saying `at` (wall-clock seconds)."""
    return (name, f"{at:.6f}".encode("ascii"))


def stamped(headers: Iterable[tuple[str, bytes]] | None, name: str) -> float | None:
    """The time header `name` says, or None when it is missing or not a finite number.

    The first header of that name counts; a header anyone could have written
    never raises here.
    """
    for key, value in headers or ():
        if key != name:
            continue
        try:
            at = float(value.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return None
        return at if math.isfinite(at) else None
    return None
