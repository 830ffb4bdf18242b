"""The native engine's in-flight requests: which are sent again, refused or forgotten, and when.

No broker: the transactions are fakes recording what each partition's
transaction sent and whether it committed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

import orjson

from schemas.codec import decode_compaction_request, encode
from schemas.compaction_request import CompactionRequest
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from streams.batch import BatchOutcome, TableWrite
from streams.native_engine.retries import RequestRetries, Sends
from streams.native_engine.store import MemoryPartitionStore
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.session_table import request_key
from tests.support.events import request_with

PARTITIONS: Final = 4
TIMEOUT_S: Final = 10.0
SETTINGS: Final = ProjectorSettings(
    topic_prefix="t",
    compaction_request_timeout_s=TIMEOUT_S,
    compaction_request_max_attempts=2,
    request_check_interval_s=5.0,
)
REQUESTS: Final = SETTINGS.topic("compaction-requests")
EVENTS: Final = SETTINGS.topic("events")


def _key_on(partition: int, name: str = "s") -> SessionKey:
    """A session key whose `events` partition is `partition`."""
    for n in range(1000):
        key = SessionKey(f"acme/app/u/{name}{n}")
        if session_partition(key.encode(), PARTITIONS) == partition:
            return key
    raise AssertionError(f"no key on partition {partition}")


def _request(session_key: SessionKey, attempt: int = 1) -> CompactionRequest:
    """A request of `session_key`'s (the support vocabulary's, moved to that session)."""
    return request_with(session_key=session_key, attempt=attempt)


@dataclass
class Sent:
    """One record a fake transaction sent."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None


@dataclass
class FakeTransactions:
    """Transactions of the `owned` partitions' producers, recorded per partition."""

    owned: set[int]
    sent: dict[int, list[Sent]] = field(default_factory=dict)
    committed: list[int] = field(default_factory=list)

    def __call__(self, partition: int) -> contextlib.AbstractAsyncContextManager[Sends] | None:
        if partition not in self.owned:
            return None
        return self.transaction(partition)

    @contextlib.asynccontextmanager
    async def transaction(self, partition: int) -> AsyncIterator[Sends]:
        records = self.sent.setdefault(partition, [])

        class _Sends:
            async def send(
                self,
                topic: str,
                *,
                key: bytes | None,
                value: bytes | None,
                partition: int | None = None,
            ) -> object:
                records.append(Sent(topic, key, value, partition))
                return None

        yield _Sends()
        self.committed.append(partition)


def _retries() -> tuple[RequestRetries, ProjectorMetrics]:
    metrics = ProjectorMetrics()
    return RequestRetries(SETTINGS, metrics, partitions=lambda: PARTITIONS), metrics


def _emitted(metrics: ProjectorMetrics, kind: str) -> float:
    value = metrics.registry.get_sample_value(
        "ctxstream_projector_requests_emitted_total", {"trigger": "sliding_window", "kind": kind}
    )
    return value or 0.0


async def test_a_request_sent_in_a_batch_is_due_again_one_timeout_after_its_commit() -> None:
    retries, metrics = _retries()
    key = _key_on(1)
    batch = FakeTransactions(owned={1})
    async with batch.transaction(1) as sends:
        await retries.send(sends, _request(key), "first")
    retries.committed(BatchOutcome(requests=[(_request(key), 1)]), now=100.0)
    assert [decode_compaction_request(s.value or b"") for s in batch.sent[1]] == [_request(key)]
    assert _emitted(metrics, "first") == 1

    timer = FakeTransactions(owned={1})
    await retries.retry_due(109.0, timer)
    assert timer.sent == {}
    await retries.retry_due(110.0, timer)
    (sent,) = timer.sent[1]
    retried = decode_compaction_request(sent.value or b"")
    assert (sent.topic, sent.key) == (REQUESTS, key.encode())
    assert (retried.request_id, retried.attempt) == (_request(key).request_id, 2)
    assert timer.committed == [1]
    assert _emitted(metrics, "retry") == 1


async def test_a_request_out_of_attempts_is_refused_on_events_in_its_partition() -> None:
    retries, metrics = _retries()
    key = _key_on(2)
    retries.committed(BatchOutcome(requests=[(_request(key, attempt=2), 2)]), now=0.0)
    transactions = FakeTransactions(owned={2})
    await retries.retry_due(TIMEOUT_S, transactions)
    (refusal,) = transactions.sent[2]
    assert (refusal.topic, refusal.key, refusal.partition) == (EVENTS, key.encode(), 2)
    envelope = orjson.loads(refusal.value or b"")
    assert envelope["session_key"] == key
    assert metrics.registry.get_sample_value("ctxstream_projector_requests_refused_total") == 1
    assert len(retries.pending) == 0
    await retries.retry_due(10 * TIMEOUT_S, transactions)
    assert len(transactions.sent[2]) == 1  # refused once, then forgotten


async def test_due_requests_go_out_in_one_transaction_per_partition_in_partition_order() -> None:
    retries, _ = _retries()
    keys = [_key_on(3, "a"), _key_on(0, "b"), _key_on(3, "c"), _key_on(1, "d")]
    outcome = BatchOutcome(
        requests=[(_request(key), session_partition(key.encode(), PARTITIONS)) for key in keys]
    )
    retries.committed(outcome, now=0.0)
    transactions = FakeTransactions(owned={0, 1, 3})
    await retries.retry_due(TIMEOUT_S, transactions)
    assert transactions.committed == [0, 1, 3]
    assert sorted(s.key or b"" for s in transactions.sent[3]) == sorted(
        [keys[0].encode(), keys[2].encode()]
    )


async def test_a_partition_no_longer_owned_is_skipped_and_its_requests_not_sent() -> None:
    retries, metrics = _retries()
    owned, gone = _key_on(0), _key_on(1)
    retries.committed(BatchOutcome(requests=[(_request(owned), 0), (_request(gone), 1)]), 0.0)
    transactions = FakeTransactions(owned={0})
    await retries.retry_due(TIMEOUT_S, transactions)
    assert set(transactions.sent) == {0}
    assert _emitted(metrics, "retry") == 1


async def test_answered_and_revoked_requests_are_never_due() -> None:
    retries, _ = _retries()
    answered, revoked, kept = _key_on(0, "a"), _key_on(1, "r"), _key_on(2, "k")
    requests = [(_request(answered), 0), (_request(revoked), 1), (_request(kept), 2)]
    retries.committed(BatchOutcome(requests=requests), now=0.0)
    retries.committed(BatchOutcome(answered=[answered]), now=1.0)
    retries.revoked({1})
    transactions = FakeTransactions(owned={0, 1, 2})
    await retries.retry_due(TIMEOUT_S, transactions)
    assert [s.key for sent in transactions.sent.values() for s in sent] == [kept.encode()]


async def test_the_timer_looks_at_most_once_per_check_interval() -> None:
    retries, _ = _retries()
    key = _key_on(0)
    retries.committed(BatchOutcome(requests=[(_request(key), 0)]), now=0.0)
    transactions = FakeTransactions(owned={0})
    await retries.retry_if_due(8.0, transactions)  # a look: nothing due yet
    await retries.retry_if_due(TIMEOUT_S, transactions)  # due, but before the next look
    assert transactions.sent == {}
    await retries.retry_if_due(8.0 + SETTINGS.request_check_interval_s, transactions)
    assert len(transactions.sent[0]) == 1


def test_a_restored_partitions_stored_requests_are_learned_and_timed_from_then() -> None:
    retries, _ = _retries()
    store = MemoryPartitionStore()
    key, broken = _key_on(1, "ok"), _key_on(1, "broken")
    _put(store, request_key(key), encode(_request(key, attempt=3)))
    _put(store, request_key(broken), b"not a request")
    _put(store, b"p:1", b"12")
    retries.learn(1, store, now=50.0)
    due = retries.pending.due(50.0 + TIMEOUT_S, TIMEOUT_S, max_attempts=5)
    assert [(r.session_key, r.attempt) for r in due.retries] == [(key, 4)]
    assert retries.pending.due(50.0 + TIMEOUT_S - 0.1, TIMEOUT_S, 5).retries == []


def test_a_request_known_already_is_not_learned_again() -> None:
    retries, _ = _retries()
    key = _key_on(1)
    retries.committed(BatchOutcome(requests=[(_request(key, attempt=2), 1)]), now=100.0)
    store = MemoryPartitionStore()
    _put(store, request_key(key), encode(_request(key, attempt=1)))
    retries.learn(1, store, now=0.0)
    assert retries.pending.due(100.0 + TIMEOUT_S - 1, TIMEOUT_S, 5).retries == []
    (retry,) = retries.pending.due(100.0 + TIMEOUT_S, TIMEOUT_S, 5).retries
    assert retry.attempt == 3


def _put(store: MemoryPartitionStore, key: bytes, value: bytes) -> None:
    store.apply([TableWrite(1, key, value)], store.changelog_next)
