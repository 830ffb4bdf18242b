"""The pure parts of what ``bench ingest --workers`` reads of a group: claimants and the split."""

from __future__ import annotations

import os

from ctxstream.bench.ingest_group import claimant_pid, split_as_assigned
from streams.native_engine.ownership import new_worker_id


def test_the_claimant_is_the_process_that_made_the_worker_id() -> None:
    assert claimant_pid(new_worker_id()) == os.getpid()
    assert claimant_pid("box-a-b-4242-0a1b2c3d") == 4242


def test_the_split_matches_only_when_every_member_restored_its_own_partitions() -> None:
    assignment = [frozenset({0, 2}), frozenset({1, 3})]
    assert split_as_assigned({0: 7, 2: 7, 1: 9, 3: 9}, assignment)
    # Partition 3 moved to the second member, still claimed by the first: not ready.
    assert not split_as_assigned({0: 7, 2: 7, 1: 9, 3: 7}, assignment)
    # One claimant for everything while two members hold partitions: not ready.
    assert not split_as_assigned({0: 7, 1: 7, 2: 7, 3: 7}, assignment)
