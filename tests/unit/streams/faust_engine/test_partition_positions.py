"""The projector admits each partition's records in offset order, asking the log of every gap."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.batch import SourceRecord
from streams.faust_engine.partition_positions import (
    Gap,
    GapRecords,
    PartitionPositions,
    start_position,
)

NOTHING: dict[int, int | None] = {}


def _records(partition: int, *offsets: int) -> list[SourceRecord]:
    return [SourceRecord("events", partition, offset, b"k", b"v") for offset in offsets]


def _offsets(records: list[SourceRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


def _missing(log: list[int], gaps: list[Gap]) -> GapRecords:
    return {
        gap: _records(0, *[offset for offset in log if gap.expected <= offset < gap.seen])
        for gap in gaps
    }


def test_records_continuing_the_position_are_admitted_and_move_it() -> None:
    positions = PartitionPositions(idle_s=5.0)
    records = _records(0, 10, 11) + _records(1, 5)
    stored = {0: 10, 1: None}.get
    assert positions.gaps(records, stored) == []
    admission = positions.admit(records, stored, {})
    assert _offsets(admission.records) == [(0, 10), (0, 11), (1, 5)]
    assert admission.positions == {0: 12, 1: 6}
    assert admission.gaps == []


def test_redelivered_records_are_admitted_without_moving_the_position() -> None:
    positions = PartitionPositions(idle_s=5.0)
    records = _records(0, 7, 8, 9, 10)
    assert positions.gaps(records, {0: 10}.get) == []
    admission = positions.admit(records, {0: 10}.get, {})
    assert _offsets(admission.records) == [(0, 7), (0, 8), (0, 9), (0, 10)]
    assert admission.positions == {0: 11}


def test_a_gap_the_log_holds_no_record_in_is_admitted() -> None:
    positions = PartitionPositions(idle_s=5.0)
    records = _records(0, 12, 13, 15)  # 10, 11 and 14: transaction markers
    gaps = positions.gaps(records, {0: 10}.get)
    assert gaps == [Gap(0, 10, 12), Gap(0, 14, 15)]
    admission = positions.admit(records, {0: 10}.get, {gap: [] for gap in gaps})
    assert _offsets(admission.records) == [(0, 12), (0, 13), (0, 15)]
    assert admission.gaps == []
    assert admission.positions == {0: 16}


def test_the_records_the_log_holds_in_a_gap_are_folded_in_their_place() -> None:
    positions = PartitionPositions(idle_s=5.0)
    records = _records(0, 15, 16) + _records(1, 3)
    stored = {0: 11, 1: 3}.get
    assert positions.gaps(records, stored) == [Gap(0, 11, 15)]
    dropped = _records(0, 12, 14)  # 11, 13: markers
    admission = positions.admit(records, stored, {Gap(0, 11, 15): dropped})
    assert _offsets(admission.records) == [(0, 12), (0, 14), (0, 15), (0, 16), (1, 3)]
    assert admission.gaps == []
    assert admission.positions == {0: 17, 1: 4}
    again = positions.admit(_records(0, 12, 13, 14, 17), NOTHING.get, {})
    assert _offsets(again.records) == [(0, 12), (0, 13), (0, 14), (0, 17)]  # redeliveries
    assert again.positions == {0: 18}


def test_a_gap_the_log_did_not_answer_is_sought_back_to_the_expected_offset() -> None:
    positions = PartitionPositions(idle_s=5.0)
    records = _records(0, 12, 13)
    assert positions.gaps(records, {0: 10}.get) == [Gap(0, 10, 12)]
    unanswered = positions.admit(records, {0: 10}.get, {})
    assert unanswered.records == []
    assert unanswered.gaps == [Gap(0, 10, 12)]
    again = positions.gaps(records, NOTHING.get)  # asked again when it comes again
    assert again == [Gap(0, 10, 12)]
    answered = positions.admit(records, NOTHING.get, {Gap(0, 10, 12): []})
    assert _offsets(answered.records) == [(0, 12), (0, 13)]


def test_revoked_partitions_read_their_position_again() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 10), {0: 10}.get, {})
    positions.revoked({0})
    records = _records(0, 20)
    assert positions.gaps(records, {0: 20}.get) == []
    assert _offsets(positions.admit(records, {0: 20}.get, {}).records) == [(0, 20)]


def test_a_stalled_partition_is_probed_and_left_alone_when_only_markers_were_fetched() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 10), {0: 10}.get, {})  # expects 11
    positions.heard({0}, 0.0)
    assert positions.stalled({0: 11}, NOTHING, 100.0, 100.0) == []  # fetched what it delivered
    assert positions.stalled({0: 12}, NOTHING, 3.0, 3.0) == []  # records may be in flight
    stall = Gap(0, 11, 12)
    assert positions.stalled({0: 12}, NOTHING, 6.0, 6.0) == [stall]
    assert positions.stall_answered(stall, {stall: []}) is None  # 11: a marker
    assert positions.stalled({0: 12}, NOTHING, 100.0, 100.0) == []  # the log answered already


def test_a_stalled_partition_with_records_left_behind_is_sought_back_with_growing_pauses() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 10), {0: 10}.get, {})
    positions.heard({0}, 0.0)
    stall = Gap(0, 11, 14)
    assert positions.stalled({0: 14}, NOTHING, 6.0, 6.0) == [stall]
    assert positions.stall_answered(stall, {stall: _records(0, 12)}) == Gap(0, 12, 14)
    assert positions.stalled({0: 14}, NOTHING, 12.0, 12.0) == []  # the pause doubled to 10 s
    again = Gap(0, 12, 14)
    assert positions.stalled({0: 14}, NOTHING, 16.0, 16.0) == [again]
    assert positions.stall_answered(again, {}) == again  # unanswered: seek all the same
    assert positions.sought_before(0)
    held = positions.admit(_records(0, 13), NOTHING.get, {})
    assert held.records == []  # waiting for 12
    refetched = positions.admit(_records(0, 12, 13), NOTHING.get, {})
    assert refetched.positions == {0: 14}


def test_no_stall_is_probed_while_faust_still_had_records_queued() -> None:
    positions = PartitionPositions(idle_s=5.0)
    positions.admit(_records(0, 10), {0: 10}.get, {})
    positions.heard({0}, 4.0)  # the batch's fold ended at 4.0
    assert positions.stalled({0: 14}, NOTHING, 8.0, 8.0) == []  # idle 4 s only
    assert positions.stalled({0: 14}, NOTHING, 20.0, 3.0) == []  # full batches since
    assert positions.stalled({0: 14}, NOTHING, 20.0, 19.0) == [Gap(0, 11, 14)]


def test_a_partition_that_delivered_nothing_since_its_assignment_is_probed_from_its_commit() -> (
    None
):
    positions = PartitionPositions(idle_s=5.0)
    assert positions.stalled({3: 40}, {3: 35}, 0.0, 0.0) == []  # first heard of
    stall = Gap(3, 35, 40)
    assert positions.stalled({3: 40}, {3: 35}, 5.0, 5.0) == [stall]
    assert positions.stall_answered(stall, {stall: _records(3, 37)}) == Gap(3, 37, 40)
    fresh = PartitionPositions(idle_s=5.0)
    assert fresh.stalled({3: 40}, {3: None}, 0.0, 0.0) == []
    assert fresh.stalled({3: 40}, {3: None}, 5.0, 5.0) == [Gap(3, 0, 40)]  # nothing committed yet


def test_the_check_starts_at_the_committed_offset_when_it_lies_below_the_stored_one() -> None:
    assert start_position(104, 100) == 100
    assert start_position(100, 104) == 100
    assert start_position(None, 100) == 0  # nothing folded yet
    assert start_position(None, None) == 0
    assert start_position(104, None) == 104


def test_records_skipped_between_committed_and_stored_positions_are_read_from_the_log() -> None:
    # Folded up to 103 (stored 104), committed 100: faust delivering 104 first skipped
    # 100..103; read from the log they are redeliveries to the sessions' fold (faust's
    # commits wait below them: see the commit holes).
    positions = PartitionPositions(idle_s=5.0)
    stored = lambda _: start_position(104, 100)  # noqa: E731
    records = _records(2, 104, 105)
    gaps = positions.gaps(records, stored)
    assert gaps == [Gap(2, 100, 104)]
    admission = positions.admit(records, stored, {gaps[0]: _records(2, 100, 101, 102, 103)})
    assert [offset for _, offset in _offsets(admission.records)] == [100, 101, 102, 103, 104, 105]
    assert admission.gaps == []


def test_a_committed_offset_stuck_below_the_fold_is_sought_back_to() -> None:
    positions = PartitionPositions(idle_s=1.0)
    positions.admit(_records(0, 10, 11, 12), {0: 10}.get, {})  # folded up to 12
    assert positions.commit_holes({0: 10}, 1.0) == []  # first seen
    assert positions.commit_holes({0: 11}, 2.0) == []  # moving: faust commits
    assert positions.commit_holes({0: 11}, 4.0) == []  # not long enough yet
    assert positions.commit_holes({0: 11}, 5.0) == [Gap(0, 11, 13)]
    assert positions.commit_holes({0: 13}, 9.0) == []  # caught up


@st.composite
def _deliveries(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, frozenset[int], int]]]:
    """A partition's committed offsets, and faust's deliveries: (batch size, drops, stale)."""
    skips = draw(st.lists(st.integers(0, 3), min_size=1, max_size=40))
    log, offset = [], 0
    for skip in skips:  # markers and aborted records between committed records
        offset += skip
        log.append(offset)
        offset += 1
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(1, 6),
                st.frozensets(st.integers(0, 5), max_size=3),
                st.integers(0, 2),
            ),
            max_size=20,
        )
    )
    return log, steps


@settings(max_examples=300, deadline=None)
@given(_deliveries())
def test_whatever_faust_drops_the_fold_sees_the_log_exactly_once_in_order(
    case: tuple[list[int], list[tuple[int, frozenset[int], int]]],
) -> None:
    """faust delivers batches that drop records, repeat stale ones and obey seeks late.

    Answered from the true log, the records folded for the first time are the
    log itself, in order, once the drops stop and the stall timer has run.
    """
    log, steps = case
    positions = PartitionPositions(idle_s=1.0)
    stored = {0: start_position(None, None)}.get
    folded: list[int] = []
    read = 0  # index in `log` of faust's next fetch
    now = 0.0

    def deliver(batch: list[int]) -> None:
        nonlocal read
        records = _records(0, *batch)
        gaps = positions.gaps(records, stored)
        admission = positions.admit(records, stored, _missing(log, gaps))
        positions.heard({0}, now)  # the shell's account of the batch's end
        for record in admission.records:
            if not folded or record.offset > folded[-1]:
                folded.append(record.offset)
        for seek in admission.gaps:
            read = bisect.bisect_left(log, seek.expected)

    for size, drops, stale in steps:  # faust misbehaving
        now += 0.5
        start = read
        fetched = log[read : read + size]
        read += len(fetched)
        kept = [offset for index, offset in enumerate(fetched) if index not in drops]
        if kept or stale:
            deliver(log[max(0, start - stale) : start] + kept)
    for _ in range(4 * len(log) + 10):  # faust behaving; the timer probes stalls
        now += 2.0
        if read < len(log):
            fetched = log[read : read + 4]
            read += len(fetched)
            deliver(fetched)
            continue
        position = log[-1] + 3  # fetched past the markers after the last record
        for stall in positions.stalled({0: position}, {0: None}, now, now):
            seek = positions.stall_answered(stall, _missing(log, [stall]))
            if seek is not None:
                read = bisect.bisect_left(log, seek.expected)
    assert folded == log
