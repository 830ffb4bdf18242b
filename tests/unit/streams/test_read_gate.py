"""The read gate: which partitions a read may look at, and waking reads without polling."""

from __future__ import annotations

import asyncio

from streams.reads.gate import PartitionState, ReadGate


def test_a_partition_is_readable_only_once_restored_and_between_batches() -> None:
    gate = ReadGate()
    assert gate.state(3) is None
    gate.assigned({3})
    assert gate.state(3) == PartitionState("restoring")
    gate.restored(3, 40)
    assert gate.state(3) == PartitionState("committed", 40)
    gate.folding(3)
    assert gate.state(3) == PartitionState("folding", 40)
    gate.committed(3, 52)
    assert gate.state(3) == PartitionState("committed", 52)
    gate.released({3})
    assert gate.state(3) is None


async def test_a_waiting_read_wakes_on_its_partitions_commit_and_not_on_others() -> None:
    gate = ReadGate()
    gate.restored(1, 0)
    gate.restored(2, 0)
    moved = gate.moved(1)
    gate.committed(2, 9)
    gate.folding(1)  # a fold alone is nothing a read can use
    assert not moved.is_set()
    gate.committed(1, 5)
    await asyncio.wait_for(moved.wait(), 1.0)
    assert gate.moved(1) is not moved  # the next change sets a new event


async def test_losing_a_partition_or_closing_wakes_its_reads_and_refuses_them() -> None:
    gate = ReadGate()
    gate.restored(1, 0)
    gate.restored(2, 0)
    lost, kept = gate.moved(1), gate.moved(2)
    gate.released({1})
    assert lost.is_set()
    assert not kept.is_set()
    gate.close()
    assert kept.is_set()
    assert gate.state(2) is None
