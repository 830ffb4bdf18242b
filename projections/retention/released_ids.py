"""The ids released events named, eight bytes each: what a new event is checked against. Pure.

When retention (:mod:`projections.retention.log_retention`) releases the start
of a session, the maps keyed by what those events named (invocation ids, call
ids, the requests their summaries answer) lose those entries, and the ids go
here, each as a 64-bit digest of its kind and value in one sorted array:
8 bytes an id, a membership test in O(log n). An event that names a released
id asks for the history. Two ids share a digest with a chance of about n/2^64
per new id, which only makes the fold ask for a history it did not need.

Example: ``ReleasedIds().with_ids([("invocation", "inv1")]).has("invocation",
"inv1")`` -> True; the fold then refuses a new event of ``inv1`` with
:class:`~projections.retention.retained_vector.NeedsHistory`.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

Kind = Literal["invocation", "call", "request"]

_TAGS: Final[dict[Kind, bytes]] = {"invocation": b"i\0", "call": b"c\0", "request": b"r\0"}


def digest(kind: Kind, value: str) -> int:
    """The signed 64-bit digest of one id of `kind`."""
    raw = hashlib.blake2b(_TAGS[kind] + value.encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big", signed=True)


def _empty() -> array[int]:
    return array("q")


@dataclass(frozen=True, slots=True)
class ReleasedIds:
    """Sorted digests of the ids released events named. Never changed once built.

    Attributes:
        digests: The digests, ascending, no repeats.
    """

    digests: array[int] = field(default_factory=_empty)

    def __len__(self) -> int:
        return len(self.digests)

    def __bool__(self) -> bool:
        return bool(self.digests)

    def has(self, kind: Kind, value: str | None) -> bool:
        """Whether a released event named `value` as an id of `kind` (or one sharing its digest)."""
        if not value or not self.digests:
            return False
        wanted = digest(kind, value)
        position = bisect_left(self.digests, wanted)
        return position < len(self.digests) and self.digests[position] == wanted

    def with_ids(self, ids: Iterable[tuple[Kind, str]]) -> ReleasedIds:
        """These ids and `ids` (empty values left out). O(n log n)."""
        added = {digest(kind, value) for kind, value in ids if value}
        if not added:
            return self
        return ReleasedIds(array("q", sorted(added.union(self.digests))))

    def to_bytes(self) -> bytes:
        """The digests as little-endian 8-byte integers."""
        if sys.byteorder == "little":
            return self.digests.tobytes()
        swapped = array("q", self.digests)
        swapped.byteswap()
        return swapped.tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> ReleasedIds:
        """The ids :meth:`to_bytes` wrote.

        Raises:
            ValueError: `raw` is not a whole number of 8-byte integers.
        """
        digests = array("q")
        digests.frombytes(raw)
        if sys.byteorder != "little":
            digests.byteswap()
        return cls(digests)
