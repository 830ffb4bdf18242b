"""The native engine's local state of one `events` partition: the ``sessions`` table's entries.

A store holds the entries the batch step reads (:mod:`streams.session_table`
names them) and the one number that ties it to the changelog: the next
changelog offset it has not applied (:attr:`PartitionStore.changelog_next`).
The engine writes a batch's entries here only after the batch's transaction
committed, together with that number in one atomic write, so a store may lag
its changelog (a crash between the commit and the write) but is never ahead
of it and never holds an aborted write; restoring it is reading the
changelog's committed records from :attr:`PartitionStore.changelog_next` on
(:mod:`streams.native_engine.changelog`).

Two kinds, opened by :class:`PartitionStores` as the settings say:
:class:`MemoryPartitionStore` (tests; kept for the process's life) and
:class:`RocksPartitionStore` (a RocksDB database per partition through
rocksdict; a restart restores the changelog's tail only).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final, Literal, Protocol

from rocksdict import Options, Rdict, WriteBatch

from streams.batch import TableWrite
from streams.projector_settings import ProjectorSettings

#: Where a store keeps its changelog position. The table's own keys start with a letter and a
#: colon (:mod:`streams.session_table`), so this one cannot collide with them.
CHANGELOG_NEXT_KEY: Final = b"\x00changelog-next"


class PartitionStore(Protocol):
    """One partition's table entries and its changelog position."""

    @property
    def changelog_next(self) -> int:
        """The next changelog offset not applied here (0: nothing applied)."""
        ...

    def get(self, key: bytes) -> bytes | None:
        """The entry's value, or None."""
        ...

    def keys_with_prefix(self, prefix: bytes) -> Iterator[bytes]:
        """The keys starting with `prefix`, in key order."""
        ...

    def entries(self) -> dict[bytes, bytes]:
        """Every table entry (the changelog position left out). O(entries): for tests and tools."""
        ...

    def apply(self, writes: Iterable[TableWrite], changelog_next: int) -> None:
        """Apply `writes` (None deletes) and move the changelog position, atomically."""
        ...

    def wipe(self) -> None:
        """Forget every entry and the position (the changelog was recreated)."""
        ...

    def close(self) -> None:
        """Release the store's resources; it is not used after this."""
        ...


class MemoryPartitionStore:
    """A store in a dict: nothing survives the process."""

    def __init__(self) -> None:
        self._entries: dict[bytes, bytes] = {}
        self._changelog_next = 0

    @property
    def changelog_next(self) -> int:
        """The next changelog offset not applied here."""
        return self._changelog_next

    def get(self, key: bytes) -> bytes | None:
        """The entry's value, or None."""
        return self._entries.get(key)

    def keys_with_prefix(self, prefix: bytes) -> Iterator[bytes]:
        """The keys starting with `prefix`, in key order."""
        return iter(sorted(key for key in self._entries if key.startswith(prefix)))

    def entries(self) -> dict[bytes, bytes]:
        """Every table entry."""
        return dict(self._entries)

    def apply(self, writes: Iterable[TableWrite], changelog_next: int) -> None:
        """Apply `writes` and move the changelog position."""
        for write in writes:
            if write.value is None:
                self._entries.pop(write.key, None)
            else:
                self._entries[write.key] = write.value
        self._changelog_next = changelog_next

    def wipe(self) -> None:
        """Forget every entry and the position."""
        self._entries.clear()
        self._changelog_next = 0

    def close(self) -> None:
        """Nothing to release."""


class RocksPartitionStore:
    """A RocksDB database of one partition (rocksdict, raw bytes), written in atomic batches."""

    def __init__(self, path: Path) -> None:
        """Open (or create) the database at `path`."""
        self._path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = Rdict(str(path), options=Options(raw_mode=True))
        raw = self._db.get(CHANGELOG_NEXT_KEY)
        self._changelog_next = 0 if raw is None else int(raw)

    @property
    def changelog_next(self) -> int:
        """The next changelog offset not applied here."""
        return self._changelog_next

    def get(self, key: bytes) -> bytes | None:
        """The entry's value, or None."""
        value: bytes | None = self._db.get(key)
        return value

    def keys_with_prefix(self, prefix: bytes) -> Iterator[bytes]:
        """The keys starting with `prefix`, in key order."""
        for key in self._db.keys(from_key=prefix):
            if not isinstance(key, bytes) or not key.startswith(prefix):
                return  # raw mode: every key is bytes
            yield key

    def entries(self) -> dict[bytes, bytes]:
        """Every table entry (the changelog position left out)."""
        return {
            key: value
            for key, value in self._db.items()
            if isinstance(key, bytes) and isinstance(value, bytes) and key != CHANGELOG_NEXT_KEY
        }

    def apply(self, writes: Iterable[TableWrite], changelog_next: int) -> None:
        """Apply `writes` and the new position in one RocksDB write batch."""
        batch = WriteBatch(raw_mode=True)
        for write in writes:
            if write.value is None:
                batch.delete(write.key)
            else:
                batch.put(write.key, write.value)
        batch.put(CHANGELOG_NEXT_KEY, str(changelog_next).encode())
        self._db.write(batch)
        self._changelog_next = changelog_next

    def wipe(self) -> None:
        """Delete the database and open an empty one in its place."""
        self._db.close()
        shutil.rmtree(self._path, ignore_errors=True)
        self._db = Rdict(str(self._path), options=Options(raw_mode=True))
        self._changelog_next = 0

    def close(self) -> None:
        """Close the database (its files stay for the next assignment)."""
        self._db.close()


class PartitionStores:
    """Opens each partition's store, of the kind the settings' ``table_store`` names."""

    def __init__(self, settings: ProjectorSettings) -> None:
        """Stores under `settings`' ``data_dir`` (RocksDB), or in this process's memory."""
        self.kind: Literal["rocksdb", "memory"] = (
            "rocksdb" if settings.table_store.startswith("rocksdb") else "memory"
        )
        self._root = Path(settings.data_dir) / f"{settings.app_id}-sessions"
        self._memory: dict[int, MemoryPartitionStore] = {}

    def open(self, partition: int) -> PartitionStore:
        """The store of `partition`: its RocksDB database, or its memory store."""
        if self.kind == "rocksdb":
            return RocksPartitionStore(self._root / f"partition-{partition}")
        # Kept across revocations like a RocksDB database's files: a partition that comes
        # back restores only the changelog's tail.
        return self._memory.setdefault(partition, MemoryPartitionStore())
