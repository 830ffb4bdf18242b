"""The native engine's partition stores: entries, prefix scans, the changelog position, wipes.

Both kinds are held to the same expectations, written out here; the RocksDB
store also keeps its entries and position across a close and a reopen (what a
restart restores only the changelog's tail from), and never reports a key of
another prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams.batch import TableWrite
from streams.native_engine.store import (
    MemoryPartitionStore,
    PartitionStore,
    RocksPartitionStore,
)

Opener = Callable[[], PartitionStore]


@pytest.fixture(params=["memory", "rocksdb"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[PartitionStore] = []

    def opener() -> PartitionStore:
        store: PartitionStore = (
            MemoryPartitionStore()
            if request.param == "memory"
            else RocksPartitionStore(tmp_path / "partition-0")
        )
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


def write(key: bytes, value: bytes | None) -> TableWrite:
    return TableWrite(0, key, value)


def test_a_new_store_is_empty_at_position_zero(open_store: Opener) -> None:
    store = open_store()
    assert store.changelog_next == 0
    assert store.get(b"h:a/b/c/d") is None
    assert list(store.keys_with_prefix(b"r:")) == []


def test_writes_apply_in_order_and_move_the_position(open_store: Opener) -> None:
    store = open_store()
    store.apply(
        [
            write(b"h:s1", b"1"),
            write(b"r:s1", b"req"),
            write(b"h:s1", b"2"),
            write(b"c:s1:0", b"x"),
        ],
        17,
    )
    assert store.get(b"h:s1") == b"2"  # the later write wins
    assert store.get(b"r:s1") == b"req"
    assert store.get(b"c:s1:0") == b"x"
    assert store.changelog_next == 17
    store.apply([write(b"r:s1", None), write(b"r:gone", None)], 20)  # deleting a missing key
    assert store.get(b"r:s1") is None
    assert store.get(b"h:s1") == b"2"
    assert store.changelog_next == 20


def test_a_prefix_scan_lists_only_that_prefix_in_key_order(open_store: Opener) -> None:
    store = open_store()
    store.apply(
        [
            write(b"r:b", b"2"),
            write(b"q:z", b"0"),
            write(b"r:a", b"1"),
            write(b"s:a", b"3"),
            write(b"r", b"no colon"),
            write(b"h:r:a", b"4"),
        ],
        1,
    )
    assert list(store.keys_with_prefix(b"r:")) == [b"r:a", b"r:b"]
    assert list(store.keys_with_prefix(b"h:")) == [b"h:r:a"]
    assert list(store.keys_with_prefix(b"c:")) == []


def test_a_wipe_forgets_entries_and_position(open_store: Opener) -> None:
    store = open_store()
    store.apply([write(b"h:s", b"1"), write(b"r:s", b"2")], 9)
    store.wipe()
    assert store.changelog_next == 0
    assert store.get(b"h:s") is None
    assert list(store.keys_with_prefix(b"r:")) == []
    store.apply([write(b"h:t", b"3")], 2)
    assert store.get(b"h:t") == b"3"
    assert store.changelog_next == 2


def test_a_rocksdb_store_keeps_entries_and_position_across_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "partition-3"
    store = RocksPartitionStore(path)
    store.apply([write(b"h:s", b"1"), write(b"r:s", b"req")], 41)
    store.apply([write(b"r:s", None)], 44)
    store.close()
    reopened = RocksPartitionStore(path)
    try:
        assert reopened.changelog_next == 44
        assert reopened.get(b"h:s") == b"1"
        assert reopened.get(b"r:s") is None
    finally:
        reopened.close()


def test_a_rocksdb_wipe_survives_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "partition-1"
    store = RocksPartitionStore(path)
    store.apply([write(b"h:s", b"1")], 7)
    store.wipe()
    store.close()
    reopened = RocksPartitionStore(path)
    try:
        assert reopened.changelog_next == 0
        assert reopened.get(b"h:s") is None
    finally:
        reopened.close()


def test_entries_are_the_table_without_the_position(open_store: Opener) -> None:
    store = open_store()
    store.apply([write(b"h:s", b"1"), write(b"c:s:0", b"x"), write(b"r:s", b"q")], 12)
    store.apply([write(b"r:s", None)], 13)
    assert store.entries() == {b"h:s": b"1", b"c:s:0": b"x"}
