"""The ``sessions`` table as one batch of faust events reads and writes it.

faust routes a table's reads and writes by the current event's partition, and
the agent's task has none while it folds a batch (``take_events`` fills its
buffer in another task): every read and write here binds one of the batch's
events of the key's partition (:func:`~streams.faust_engine.internals.bound_to`),
so each reaches the store and changelog partition a per-event loop would.
The table's layout (session entries, ``r:`` requests, ``p:`` positions) is
:mod:`streams.session_table`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from streams.batch import TableWrite
from streams.faust_engine.internals import bound_to, changelog_sent_callback
from streams.session_table import position_key


class BatchTable:
    """The ``sessions`` table bound to one batch's events, partition by partition."""

    def __init__(self, table: Any, events: Sequence[Any]) -> None:
        """`table` (a faust table of bytes) as the batch `events` reach it."""
        self._table = table
        self._by_partition = {event.message.partition: event for event in events}

    def read(self, partition: int, key: bytes) -> bytes | None:
        """The stored value of `key` in `partition`, None when there is none."""
        with bound_to(self._by_partition[partition]):
            value: bytes | None = self._table.get(key)
            return value

    def stored_position(self, partition: int) -> int | None:
        """The next offset of `partition` the table holds (``p:``), None when none is stored."""
        raw = self.read(partition, position_key(partition))
        return None if raw is None else int(raw)

    @staticmethod
    def position_writes(positions: Mapping[int, int]) -> list[TableWrite]:
        """The ``p:`` entries that store each partition's next offset."""
        return [
            TableWrite(partition, position_key(partition), str(offset).encode())
            for partition, offset in positions.items()
        ]

    async def write(self, writes: Sequence[TableWrite]) -> list[Any]:
        """Write the table: the local store, then the changelog; the changelog sends.

        What ``table[key] = value`` does (store write, then the changelog
        record to the event's partition, with the table's callback that keeps
        the changelog offset for RocksDB's recovery), but sent to the producer
        at once and keeping the delivery future. faust's ``send_changelog``
        goes through its producer buffer instead: 100 messages deep, drained
        one message per loop step, with a warning and a flush whenever a batch
        overfills it, which cost the projector about a third of its time.
        """
        store = self._table.data
        changelog = self._table.changelog_topic
        on_sent = changelog_sent_callback(self._table)
        sent: list[Any] = []
        for write in writes:
            with bound_to(self._by_partition[write.partition]):
                if write.value is not None:
                    store[write.key] = write.value
                elif write.key in store:
                    del store[write.key]
                else:
                    continue
            sent.append(
                await changelog.send(
                    key=write.key,
                    value=write.value,
                    partition=write.partition,
                    key_serializer="raw",
                    value_serializer="raw",
                    callback=on_sent,
                )
            )
        return sent
