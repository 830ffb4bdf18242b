"""When an owned `events` partition's state may be read, and how far it has folded.

The native engine folds a batch into its session cache *before* the batch's
transaction commits. It tells the gate where each partition stands
(restoring, folding, committed at a position, or not owned), and a read looks
at the gate and reads the state in one synchronous step, so it sees what the
partition's last committed batch left. Reads wait on
:meth:`ReadGate.moved`, set at the partition's next change, never polling.
No lock: the engine changes the gate inside its own locked steps. The phase
table: this folder's README.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

Phase = Literal["restoring", "folding", "committed"]
"""Where an owned partition stands (the table in the module's docstring)."""


@dataclass(frozen=True, slots=True)
class PartitionState:
    """An owned partition's phase and the next offset its committed state will fold."""

    phase: Phase
    position: int = 0


class ReadGate:
    """The phase of each partition this worker owns, and an event per partition to wait on."""

    def __init__(self) -> None:
        self._states: dict[int, PartitionState] = {}
        self._moved: dict[int, asyncio.Event] = {}
        self._closed = False

    def state(self, partition: int) -> PartitionState | None:
        """Where `partition` stands; None when this worker does not own it (or stopped serving)."""
        return None if self._closed else self._states.get(partition)

    def moved(self, partition: int) -> asyncio.Event:
        """The event set at `partition`'s next change. Take it before looking at :meth:`state`."""
        event = self._moved.get(partition)
        if event is None:
            event = self._moved[partition] = asyncio.Event()
        return event

    def assigned(self, partitions: set[int]) -> None:
        """`partitions` were assigned and wait to be restored."""
        for partition in partitions:
            self._set(partition, PartitionState("restoring"))

    def restored(self, partition: int, position: int) -> None:
        """`partition` was restored; its next record to fold is at `position`."""
        self._set(partition, PartitionState("committed", position))

    def folding(self, partition: int) -> None:
        """A batch of `partition` is folded into the cache and not committed yet."""
        state = self._states.get(partition)
        # Nobody waits for this: a read waiting on the partition waits on for the commit.
        self._states[partition] = PartitionState("folding", state.position if state else 0)

    def committed(self, partition: int, position: int) -> None:
        """`partition`'s batch committed; its next record to fold is at `position`."""
        self._set(partition, PartitionState("committed", position))

    def released(self, partitions: set[int]) -> None:
        """`partitions` are no longer this worker's."""
        for partition in partitions:
            self._states.pop(partition, None)
            self._wake(partition)

    def close(self) -> None:
        """Stop serving: every partition reads as not owned, and every waiting read wakes."""
        self._closed = True
        for partition in list(self._moved):
            self._wake(partition)

    def _set(self, partition: int, state: PartitionState) -> None:
        self._states[partition] = state
        self._wake(partition)

    def _wake(self, partition: int) -> None:
        event = self._moved.pop(partition, None)
        if event is not None:
            event.set()
