"""Which offset of one request partition may be committed. Pure: no I/O, no clock.

Requests are handled concurrently and finish out of order: a request parked
for a retry must not be skipped by the commit, or a crash would lose it. The
committed offset therefore only moves over a contiguous run of finished
requests; requests finished after a parked one wait in `done` until it
finishes too.

The ledger also keeps the bytes of the requests it holds (their records'
key and value), so the worker can bound a partition's pending requests in
bytes as well as in count.
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
        sizes: Bytes of each request of `open`.
        pending_bytes: The sum of `sizes`.
    """

    open: deque[int] = field(default_factory=deque)
    done: set[int] = field(default_factory=set)
    last_taken: int | None = None
    sizes: dict[int, int] = field(default_factory=dict)
    pending_bytes: int = 0

    def take(self, offset: int, size: int = 0) -> None:
        """Note a request read at `offset`, whose record takes `size` bytes.

        Raises:
            ValueError: `offset` is not above every offset taken before, or
                `size` is negative.
        """
        if self.last_taken is not None and offset <= self.last_taken:
            raise ValueError(f"offset {offset} taken after {self.last_taken}")
        if size < 0:
            raise ValueError(f"size={size!r}: a record has no negative size")
        self.open.append(offset)
        self.last_taken = offset
        self.sizes[offset] = size
        self.pending_bytes += size

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
            self.pending_bytes -= self.sizes.pop(last)
        return None if last is None else last + 1

    @property
    def pending(self) -> int:
        """How many taken requests no commit covers yet."""
        return len(self.open)
