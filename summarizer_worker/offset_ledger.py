"""Which offset of one request partition may be committed. Pure: no I/O, no clock.

Requests are handled concurrently and finish out of order: a request parked
for a retry must not be skipped by the commit, or a crash would lose it. The
committed offset therefore only moves over a contiguous run of finished
requests; requests finished after a parked one wait in `done` until it
finishes too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(slots=True)
class OffsetLedger:
    """The requests of one partition taken but not yet covered by a commit.

    Example: take 5, 6, 7; finish 6 -> nothing to commit (5 is still open);
    finish 5 -> commit 7 (the next offset to read: 5 and 6 are done); finish
    7 -> commit 8.

    Attributes:
        open: Offsets taken, increasing, not yet covered by a commit.
        done: Offsets of `open` that are finished.
        last_taken: The last offset taken, None before the first.
    """

    open: deque[int] = field(default_factory=deque)
    done: set[int] = field(default_factory=set)
    last_taken: int | None = None

    def take(self, offset: int) -> None:
        """Note a request read at `offset`.

        Raises:
            ValueError: `offset` is not above every offset taken before.
        """
        if self.last_taken is not None and offset <= self.last_taken:
            raise ValueError(f"offset {offset} taken after {self.last_taken}")
        self.open.append(offset)
        self.last_taken = offset

    def finish(self, offset: int) -> None:
        """Note that the request at `offset` is finished (its outputs are written).

        Raises:
            ValueError: `offset` was not taken or is finished already.
        """
        if offset not in self.open or offset in self.done:
            raise ValueError(f"offset {offset} is not an open request")
        self.done.add(offset)

    def committable(self) -> int | None:
        """The offset to commit now (one past the contiguous finished run), or None.

        None when the run did not grow since the last call.
        """
        last: int | None = None
        while self.open and self.open[0] in self.done:
            last = self.open.popleft()
            self.done.discard(last)
        return None if last is None else last + 1

    @property
    def pending(self) -> int:
        """How many taken requests no commit covers yet."""
        return len(self.open)
