"""Commits move over contiguous finished requests only (OffsetLedger); pending bytes pause."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer_worker.backpressure import PendingBound, throttle
from summarizer_worker.offset_ledger import OffsetLedger


def test_a_parked_request_holds_the_commit_back_until_it_finishes() -> None:
    ledger = OffsetLedger()
    for offset in (5, 6, 7):
        ledger.take(offset)
    ledger.finish(6)
    assert ledger.committable() is None
    ledger.finish(5)
    assert ledger.committable() == 7
    assert ledger.committable() is None  # nothing new
    ledger.finish(7)
    assert ledger.committable() == 8
    assert ledger.pending == 0


def test_gaps_between_offsets_are_committed_past() -> None:
    ledger = OffsetLedger()
    ledger.take(3)
    ledger.take(9)  # 4..8: transaction markers or records of a revoked fetch
    ledger.finish(3)
    ledger.finish(9)
    assert ledger.committable() == 10


def test_offsets_must_rise_and_finish_once() -> None:
    ledger = OffsetLedger()
    ledger.take(4)
    with pytest.raises(ValueError, match="taken after 4"):
        ledger.take(4)
    with pytest.raises(ValueError, match="not an open request"):
        ledger.finish(5)
    ledger.finish(4)
    with pytest.raises(ValueError, match="not an open request"):
        ledger.finish(4)


@given(st.permutations(range(12)), st.integers(1, 12))
def test_the_commit_never_passes_an_unfinished_request(order: list[int], finished: int) -> None:
    ledger = OffsetLedger()
    for offset in range(12):
        ledger.take(offset)
    committed = 0
    for offset in order[:finished]:
        ledger.finish(offset)
        if (moved := ledger.committable()) is not None:
            committed = moved
    done = set(order[:finished])
    assert all(offset in done for offset in range(committed))
    assert committed == next(o for o in range(13) if o not in done)


def test_pending_bytes_are_held_until_the_commit_covers_them() -> None:
    ledger = OffsetLedger()
    ledger.take(5, 100)
    ledger.take(6, 800_000)
    ledger.take(7, 50)
    assert ledger.pending_bytes == 800_150
    ledger.finish(6)
    assert ledger.committable() is None
    assert ledger.pending_bytes == 800_150  # finished, not yet committed
    ledger.finish(5)
    assert ledger.committable() == 7
    assert ledger.pending_bytes == 50
    with pytest.raises(ValueError, match="negative size"):
        ledger.take(8, -1)


BOUND = PendingBound(requests=1_000, bytes=8 * 1024 * 1024)


@pytest.mark.parametrize(
    ("pending", "pending_bytes", "paused", "change"),
    [
        (600, 600 * 2_000, False, None),  # ordinary requests: under both bounds
        (1_000, 2_000_000, False, "pause"),  # the count bound
        (11, 11 * 800_000, False, "pause"),  # a run of large requests: the byte bound
        (11, 11 * 800_000, True, None),  # paused already
        (5, 5 * 800_000, True, "resume"),  # both at most half
        (400, 5 * 1024 * 1024, True, None),  # bytes still above half
        (600, 1_000, True, None),  # count still above half
    ],
)
def test_a_partition_pauses_over_either_bound_and_resumes_below_half_of_both(
    pending: int, pending_bytes: int, paused: bool, change: str | None
) -> None:
    assert throttle(pending, pending_bytes, paused=paused, bound=BOUND) == change
