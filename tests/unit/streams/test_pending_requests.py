"""In-flight requests are due again after the timeout, with attempt + 1 and the same id,
and are refused once their last attempt timed out."""

from __future__ import annotations

from schemas.compaction_request import CompactionRequest
from schemas.keys import Offset, SessionKey, TenantId
from streams.pending_requests import PendingRequests

KEY = SessionKey("acme/support/u1/s1")


def _request(session: SessionKey = KEY) -> CompactionRequest:
    return CompactionRequest(
        request_id=f"r-{session.replace('/', '.')}",
        tenant=TenantId("acme"),
        session_key=session,
        trigger="sliding_window",
        event_offsets=(Offset(1), Offset(2)),
        event_ids=("e1", "e2"),
        start_timestamp=1.0,
        end_timestamp=2.0,
        decided_at_offset=Offset(3),
    )


def test_requests_are_due_after_the_timeout_and_then_again() -> None:
    pending = PendingRequests()
    pending.emitted(_request(), partition=0, now=100.0)
    assert pending.due(now=109.9, timeout_s=10.0, max_attempts=5).retries == []
    (retry,) = pending.due(now=110.0, timeout_s=10.0, max_attempts=5).retries
    assert retry.attempt == 2
    assert retry.request_id == _request().request_id
    assert pending.due(now=119.0, timeout_s=10.0, max_attempts=5).retries == []
    (again,) = pending.due(now=120.0, timeout_s=10.0, max_attempts=5).retries
    assert again.attempt == 3


def test_a_request_is_refused_once_its_last_attempt_timed_out() -> None:
    pending = PendingRequests()
    pending.emitted(_request(), partition=4, now=0.0)
    first = pending.due(now=10.0, timeout_s=10.0, max_attempts=2)
    assert [r.attempt for r in first.retries] == [2]
    assert first.refused == []
    assert pending.due(now=19.9, timeout_s=10.0, max_attempts=2).refused == []
    last = pending.due(now=20.0, timeout_s=10.0, max_attempts=2)
    assert last.retries == []
    (refused,) = last.refused
    assert (refused.request.request_id, refused.request.attempt) == (_request().request_id, 2)
    assert refused.partition == 4
    assert len(pending) == 0  # refused once, never again
    assert pending.due(now=1_000.0, timeout_s=10.0, max_attempts=2).refused == []


def test_one_attempt_means_no_retry() -> None:
    pending = PendingRequests()
    pending.emitted(_request(), partition=0, now=0.0)
    due = pending.due(now=10.0, timeout_s=10.0, max_attempts=1)
    assert due.retries == []
    assert [p.request.attempt for p in due.refused] == [1]


def test_answered_and_revoked_requests_are_forgotten() -> None:
    other = SessionKey("acme/support/u2/s2")
    pending = PendingRequests()
    pending.emitted(_request(), partition=0, now=0.0)
    pending.emitted(_request(other), partition=1, now=0.0)
    pending.answered(KEY)
    pending.revoked({1})
    assert len(pending) == 0
    due = pending.due(now=1_000.0, timeout_s=1.0, max_attempts=3)
    assert due.retries == []
    assert due.refused == []


def test_a_learned_request_does_not_reset_a_known_one() -> None:
    pending = PendingRequests()
    pending.emitted(_request(), partition=0, now=0.0)
    pending.learned(_request(), partition=0, now=50.0)
    assert [r.attempt for r in pending.due(now=10.0, timeout_s=10.0, max_attempts=3).retries] == [2]
