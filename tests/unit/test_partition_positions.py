"""The projector admits each partition's records in offset order and checks every gap."""

from __future__ import annotations

from streams.partition_positions import (
    SETTLE_IDLE_PERIODS,
    Gap,
    PartitionPositions,
    start_position,
)
from streams.project_batch import SourceRecord

NOTHING: dict[int, int | None] = {}


def _records(partition: int, *offsets: int) -> list[SourceRecord]:
    return [SourceRecord("events", partition, offset, b"k", b"v") for offset in offsets]


def _offsets(records: list[SourceRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


def test_records_continuing_the_position_are_admitted_and_move_it() -> None:
    positions = PartitionPositions(idle_s=5.0)
    admission = positions.admit(_records(0, 10, 11) + _records(1, 5), {0: 10, 1: None}.get, 0.0)
    assert _offsets(admission.records) == [(0, 10), (0, 11), (1, 5)]
    assert admission.positions == {0: 12, 1: 6}
    assert admission.gaps == []


def test_redelivered_records_are_admitted_without_moving_the_position() -> None:
    positions = PartitionPositions(idle_s=5.0)
    admission = positions.admit(_records(0, 7, 8, 9, 10), {0: 10}.get, 0.0)
    assert _offsets(admission.records) == [(0, 7), (0, 8), (0, 9), (0, 10)]
    assert admission.positions == {0: 11}


def test_a_gap_stops_the_partition_until_the_first_record_after_the_seek() -> None:
    positions = PartitionPositions(idle_s=5.0)
    first = positions.admit(_records(0, 15, 16) + _records(1, 3), {0: 11, 1: 3}.get, 0.0)
    assert _offsets(first.records) == [(1, 3)]
    assert first.gaps == [Gap(0, 11, 15)]
    stale = positions.admit(_records(0, 17, 18), NOTHING.get, 0.0)  # fetched before the seek
    assert stale.records == []
    assert stale.gaps == []
    refetched = positions.admit(_records(0, 11, 12, 13, 14, 15), NOTHING.get, 0.0)
    assert [offset for _, offset in _offsets(refetched.records)] == [11, 12, 13, 14, 15]
    assert refetched.positions == {0: 16}


def test_gaps_are_checked_until_the_partition_has_settled_then_accepted() -> None:
    positions = PartitionPositions(idle_s=5.0)
    first = positions.admit(_records(0, 12), {0: 10}.get, 0.0)  # 10, 11: markers
    assert first.gaps == [Gap(0, 10, 12)]
    again = positions.admit(_records(0, 12, 13, 15), NOTHING.get, 1.0)
    # Verified at 12; 15 skips 14 while the partition settles: checked too.
    assert _offsets(again.records) == [(0, 12), (0, 13)]
    assert again.gaps == [Gap(0, 14, 15)]
    checked = positions.admit(_records(0, 15, 16), NOTHING.get, 2.0)
    assert _offsets(checked.records) == [(0, 15), (0, 16)]  # 14 was a marker
    settled = 1.0 + SETTLE_IDLE_PERIODS * 5.0
    later = positions.admit(_records(0, 18, 19), NOTHING.get, settled)
    assert _offsets(later.records) == [(0, 18), (0, 19)]  # settled: 17 a marker
    assert later.gaps == []
    assert later.positions == {0: 20}


def test_revoked_partitions_read_their_position_again() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 10), {0: 10}.get, 0.0)
    positions.revoked({0})
    admission = positions.admit(_records(0, 20), {0: 20}.get, 0.0)
    assert _offsets(admission.records) == [(0, 20)]


def test_a_partition_fetched_past_its_loaded_position_is_sought_back_with_growing_pauses() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 8), {0: 10}.get, 0.0)  # a redelivery: not verified yet
    assert positions.stalled({0: 10}, 100.0) == []  # fetched what it delivered
    assert positions.stalled({0: 14}, 3.0) == []  # records may be in flight
    assert positions.stalled({0: 14}, 6.0) == [Gap(0, 10, 14)]
    assert positions.stalled({0: 14}, 12.0) == []  # the pause doubled to 10 s
    assert positions.stalled({0: 14}, 16.0) == [Gap(0, 10, 14)]
    assert positions.sought_before(0)
    refetched = positions.admit(_records(0, 10, 11), NOTHING.get, 18.0)
    assert refetched.positions == {0: 12}
    assert positions.stalled({0: 20}, 100.0) == []  # verified: no more checks


def test_the_check_starts_at_the_committed_offset_when_it_lies_below_the_stored_one() -> None:
    assert start_position(104, 100) == 100
    assert start_position(100, 104) == 100
    assert start_position(None, 100) is None
    assert start_position(104, None) == 104


def test_records_skipped_between_committed_and_stored_positions_are_sought_back() -> None:
    # Folded up to 103 (stored 104), committed 100: faust delivering 104 first skipped
    # 100..103, which it must still deliver and ack before it can commit past them.
    positions = PartitionPositions(idle_s=5.0)
    admission = positions.admit(_records(2, 104, 105), lambda _: start_position(104, 100), 0.0)
    assert admission.records == []
    assert admission.gaps == [Gap(2, 100, 104)]
    again = positions.admit(_records(2, 100, 101, 102, 103, 104), NOTHING.get, 1.0)
    assert _offsets(again.records) == [(2, 100), (2, 101), (2, 102), (2, 103), (2, 104)]
    assert again.gaps == []


def test_a_committed_offset_stuck_below_the_fold_is_sought_back_to() -> None:
    positions = PartitionPositions(idle_s=1.0)
    positions.admit(_records(0, 10, 11, 12), {0: 10}.get, 0.0)  # folded up to 12
    assert positions.commit_holes({0: 10}, 1.0) == []  # first seen
    assert positions.commit_holes({0: 11}, 2.0) == []  # moving: faust commits
    assert positions.commit_holes({0: 11}, 4.0) == []  # not long enough yet
    assert positions.commit_holes({0: 11}, 5.0) == [Gap(0, 11, 13)]
    assert positions.commit_holes({0: 13}, 9.0) == []  # caught up
