"""Released ids: signed 64-bit digests, a membership test, and an 8-byte little-endian form.

The digests are recomputed here from their definition (the first 8 bytes of
blake2b over the kind's tag and the id, read as a signed big-endian integer)
and the byte form from :meth:`int.to_bytes`, not from the code under test.
"""

from __future__ import annotations

import hashlib
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.retention import released_ids
from projections.retention.released_ids import ReleasedIds, digest

#: Ids whose digests are of both signs (hand-checked: call "a" and invocation "inv0" are negative).
IDS: list[tuple[released_ids.Kind, str]] = [("call", "a"), ("call", "b"), ("invocation", "inv0")]


_TAG: dict[str, bytes] = {"invocation": b"i\0", "call": b"c\0", "request": b"r\0"}


def _blake(tag: bytes, value: str) -> int:
    raw = hashlib.blake2b(tag + value.encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big", signed=True)


def test_a_digest_is_blake2b_of_the_kind_and_id_read_big_endian_and_signed() -> None:
    assert digest("call", "a") == _blake(b"c\0", "a")
    assert digest("invocation", "inv0") == _blake(b"i\0", "inv0")
    assert digest("request", "r") == _blake(b"r\0", "r")
    assert digest("call", "a") < 0 < digest("call", "b")


def test_an_empty_set_holds_signed_8_byte_digests_like_a_built_one() -> None:
    empty = ReleasedIds()
    assert empty.digests.typecode == "q"
    assert empty.digests.typecode == empty.with_ids(IDS).digests.typecode
    assert ReleasedIds.from_bytes(b"").digests.typecode == "q"


def test_an_empty_set_holds_nothing() -> None:
    empty = ReleasedIds()
    assert not empty
    assert not empty.has("call", "a")
    assert not empty.has("invocation", "inv0")


def test_a_missing_or_empty_id_is_never_released() -> None:
    released = ReleasedIds().with_ids(IDS)
    assert released.has("call", "a")
    assert not released.has("call", None)
    assert not released.has("call", "")
    assert not released.has("invocation", None)


def test_an_id_is_held_under_its_own_kind_only() -> None:
    released = ReleasedIds().with_ids(IDS)
    assert released.has("invocation", "inv0")
    assert not released.has("call", "inv0")
    assert not released.has("request", "a")
    assert not released.has("call", "c")


def test_the_byte_form_is_each_digest_little_endian_in_ascending_order() -> None:
    released = ReleasedIds().with_ids(IDS)
    expected = b"".join(
        value.to_bytes(8, "little", signed=True)
        for value in sorted(digest(kind, value) for kind, value in IDS)
    )
    assert released.to_bytes() == expected
    assert ReleasedIds.from_bytes(expected) == released


def test_a_host_of_the_other_byte_order_swaps_every_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    released = ReleasedIds().with_ids(IDS)
    words = sorted(digest(kind, value) for kind, value in IDS)
    # Told the host has the other byte order, the code swaps (or leaves) every 8-byte word as
    # that order would need: on a little-endian host it swaps to big-endian, on a big-endian
    # host it leaves the native big-endian memory. Either way each digest comes out big-endian.
    other = "big" if sys.byteorder == "little" else "little"
    monkeypatch.setattr(released_ids, "sys", SimpleNamespace(byteorder=other))
    swapped = b"".join(value.to_bytes(8, "big", signed=True) for value in words)
    assert released.to_bytes() == swapped
    assert ReleasedIds.from_bytes(swapped) == released
    assert released.digests.tolist() == words  # the held digests are left as they were


# -- the chunks, against a plain set of digests ---------------------------------------------

_IDS = st.tuples(st.sampled_from(["invocation", "call", "request"]), st.text(max_size=6))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_IDS, max_size=40), max_size=12), st.lists(_IDS, max_size=20))
def test_releases_hold_exactly_the_digests_of_every_id_released(
    batches: list[list[tuple[released_ids.Kind, str]]],
    probes: list[tuple[released_ids.Kind, str]],
) -> None:
    released, named = ReleasedIds(), set()
    for batch in batches:
        released = released.with_ids(batch)
        named |= {(kind, value) for kind, value in batch if value}
        digests = sorted({_blake(_TAG[kind], value) for kind, value in named})
        assert released.digests.tolist() == digests
        assert len(released) == len(digests)
        assert bool(released) == bool(digests)
        assert ReleasedIds.from_bytes(released.to_bytes()) == released
    for kind, value in [*probes, *named]:
        assert released.has(kind, value) == (bool(value) and (kind, value) in named)


def test_a_large_set_is_cut_into_chunks_each_searched_alone() -> None:
    calls: list[tuple[released_ids.Kind, str]] = [
        ("call", f"c{serial}") for serial in range(3 * released_ids.CHUNK)
    ]
    released = ReleasedIds()
    for start in range(0, len(calls), 500):  # releases of 500 ids: chunks fill and split
        released = released.with_ids(calls[start : start + 500])
    digests = sorted(_blake(b"c\0", value) for _, value in calls)
    assert released.digests.tolist() == digests
    assert len(released.chunks) > 1
    assert all(
        released_ids.CHUNK // 2 <= len(chunk) <= released_ids.CHUNK for chunk in released.chunks
    )
    assert released.ends.tolist() == [chunk[-1] for chunk in released.chunks]
    assert all(released.has("call", value) for _, value in calls)
    assert not released.has("call", "c-1")
    assert not released.has("invocation", "c0")
    # The byte form does not depend on how the chunks fell; read back, it is cut evenly.
    read = ReleasedIds.from_bytes(released.to_bytes())
    assert read == released
    assert [len(chunk) for chunk in read.chunks] == [len(calls) // 3] * 3
    assert released.with_ids(calls[:10]) is released  # nothing new: the very same set
    assert released != ReleasedIds().with_ids(calls[1:])
