"""The ids released events named, eight bytes each: what a new event is checked against. Pure.

When retention (:mod:`projections.retention.log_retention`) releases the start
of a session, the maps keyed by what those events named (invocation ids, call
ids, the requests their summaries answer) lose those entries, and the ids go
here, each as a 64-bit digest of its kind and value. An event that names a
released id asks for the history. Two ids share a digest with a chance of
about n/2^64 per new id, which only makes the fold ask for a history it did
not need.

The digests are one ascending sequence cut into *chunks* of at most
:data:`CHUNK` (arrays of 8-byte integers), with the greatest digest of each
beside them: a membership test is two binary searches, O(log n), and a
release copies only the chunks its new ids fall in (and the short list of
the chunks' ends), never every digest; the byte form is the chunks' bytes
one after the other. Memory: 8 bytes an id, plus an array's header and 16
bytes of ends and references per chunk of :data:`CHUNK` / 2 to :data:`CHUNK`
ids (under 0.1 byte an id); the checkpoint's form, 8 bytes an id exactly.

Example: ``ReleasedIds().with_ids([("invocation", "inv1")]).has("invocation",
"inv1")`` -> True; the fold then refuses a new event of ``inv1`` with
:class:`~projections.retention.retained_vector.NeedsHistory`.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

Kind = Literal["invocation", "call", "request"]

_TAGS: Final[dict[Kind, bytes]] = {"invocation": b"i\0", "call": b"c\0", "request": b"r\0"}

#: Bytes a released id takes (a digest in its chunk).
BYTES_PER_ID: Final = 8

#: Digests a chunk holds at most; a fuller one is cut in two.
CHUNK: Final = 2048


def digest(kind: Kind, value: str) -> int:
    """The signed 64-bit digest of one id of `kind`."""
    raw = hashlib.blake2b(_TAGS[kind] + value.encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big", signed=True)


def _empty() -> array[int]:
    return array("q")


def _cut(digests: array[int]) -> list[array[int]]:
    """`digests` as chunks of at most :data:`CHUNK`, as few as may be and of even lengths."""
    pieces = -(-len(digests) // CHUNK)
    if pieces <= 1:
        return [digests]
    return [
        digests[len(digests) * k // pieces : len(digests) * (k + 1) // pieces]
        for k in range(pieces)
    ]


@dataclass(frozen=True, slots=True, eq=False)
class ReleasedIds:
    """Digests of the ids released events named, ascending, in chunks. Never changed once built.

    Equal to another set of the same digests, however they are cut.

    Attributes:
        chunks: The digests, ascending across and within chunks, none repeated,
            no chunk empty or longer than :data:`CHUNK`.
        ends: The greatest digest of each chunk, same positions.
    """

    chunks: tuple[array[int], ...] = ()
    ends: array[int] = field(default_factory=_empty)

    def __len__(self) -> int:
        return sum(len(chunk) for chunk in self.chunks)

    def __bool__(self) -> bool:
        return bool(self.chunks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReleasedIds):
            return NotImplemented
        return self.digests == other.digests

    __hash__ = None  # type: ignore[assignment]  # equal sets may be cut differently

    @property
    def digests(self) -> array[int]:
        """Every digest, ascending, in one array. O(n)."""
        joined = _empty()
        for chunk in self.chunks:
            joined.extend(chunk)
        return joined

    def has(self, kind: Kind, value: str | None) -> bool:
        """Whether a released event named `value` as an id of `kind` (or one sharing its digest)."""
        if not value or not self.chunks:
            return False
        return self._holds(digest(kind, value))

    def _holds(self, wanted: int) -> bool:
        slot = bisect_left(self.ends, wanted)  # the first chunk ending at or above it
        if slot == len(self.ends):
            return False
        chunk = self.chunks[slot]
        return chunk[bisect_left(chunk, wanted)] == wanted

    def with_ids(self, ids: Iterable[tuple[Kind, str]]) -> ReleasedIds:
        """These ids and `ids` (empty values left out).

        O(m log n) for m new ids, plus a copy of each chunk they fall in and
        of the chunks' ends (n / :data:`CHUNK`).
        """
        added = sorted(
            {
                wanted
                for kind, value in ids
                if value and not self._holds(wanted := digest(kind, value))
            }
        )
        if not added:
            return self
        if not self.chunks:
            return _of(_cut(array("q", added)))
        into: dict[int, list[int]] = {}
        last = len(self.chunks) - 1
        for wanted in added:  # each into the first chunk ending above it, or the last one
            into.setdefault(min(bisect_left(self.ends, wanted), last), []).append(wanted)
        chunks = list(self.chunks)
        for slot in sorted(into, reverse=True):  # from the end, so earlier slots stay put
            grown = array("q", chunks[slot])
            for wanted in into[slot]:
                grown.insert(bisect_left(grown, wanted), wanted)
            chunks[slot : slot + 1] = _cut(array("q", grown))
        return _of(chunks)

    def to_bytes(self) -> bytes:
        """The digests, ascending, as little-endian 8-byte integers. O(n) bytes copied."""
        if sys.byteorder == "little":
            return b"".join(chunk.tobytes() for chunk in self.chunks)
        swapped = self.digests
        swapped.byteswap()
        return swapped.tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> ReleasedIds:
        """The ids :meth:`to_bytes` wrote.

        Raises:
            ValueError: `raw` is not a whole number of 8-byte integers.
        """
        digests = _empty()
        digests.frombytes(raw)
        if sys.byteorder != "little":
            digests.byteswap()
        return _of(_cut(digests) if digests else [])


def _of(chunks: Sequence[array[int]]) -> ReleasedIds:
    return ReleasedIds(tuple(chunks), array("q", [chunk[-1] for chunk in chunks]))
