"""When a request partition's consumption pauses and resumes. Pure: no I/O, no clock.

Requests taken but not committed are held in memory, each by a task, and a
request may be up to the topic's 1 MB record limit. A partition pauses once
its pending requests reach either bound, in count or in bytes, and resumes
once both are at most half of it: the gap keeps a partition at the edge from
pausing and resuming on every poll.

Example, bounds of 1,000 requests and 8 MiB: 12 pending requests of 0.8 MB
each (9.6 MB) -> pause; 600 requests of 2 KB -> go on; paused with 4 MiB
pending -> resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class PendingBound:
    """The most uncommitted requests of one partition, in count and in bytes."""

    requests: int
    bytes: int


def throttle(
    pending: int, pending_bytes: int, *, paused: bool, bound: PendingBound
) -> Literal["pause", "resume"] | None:
    """Whether a partition with `pending` requests of `pending_bytes` should change state.

    None when it stays as it is.
    """
    over = pending >= bound.requests or pending_bytes >= bound.bytes
    under = pending <= bound.requests // 2 and pending_bytes <= bound.bytes // 2
    if over and not paused:
        return "pause"
    if paused and under:
        return "resume"
    return None
