"""``Client.subscribe`` and ``SyncClient.subscribe`` on a `projections` topic the projector filled.

Every subscriber is compared with the projector's own records of the sessions
it asked for (:meth:`Projections.written`), read until the last of them in
each partition, the records after which nothing else was written: an item of
another tenant or session, a hostile record, a record twice or one missing
would each show as a difference.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import UTC, datetime

import pytest

from ctxstream import (
    BrokerUnavailableError,
    Client,
    InvalidArgumentError,
    Subscribed,
    SyncClient,
    TopicMissingError,
)
from tests.conftest import free_ports, unique_topic
from tests.support.subscriptions import (
    RECEIVE_TIMEOUT_S,
    TENANT,
    Projections,
    collect,
    placed,
    reached,
)

pytestmark = pytest.mark.integration


async def test_from_offset_0_a_subscriber_sees_every_snapshot_of_its_tenant_and_no_other(
    projections: Projections, caplog: pytest.LogCaptureFixture
) -> None:
    expected = projections.written(projections.acme)
    keys = [record.key.split(b"/")[0] for record in projections.records]
    assert {b"other", b"acme-eu"} <= set(keys), "the topic holds no other tenant to leave out"

    client = Client(settings=projections.settings)  # subscribing needs no producer
    items = await collect(client.subscribe(TENANT, from_offset=0), reached(expected))

    assert placed(items) == expected
    assert all(item.snapshot is not None and item.deleted is None for item in items)
    assert {item.snapshot.tenant for item in items if item.snapshot is not None} == {TENANT}
    latest = {snapshot.session_key: snapshot for _, _, snapshot in placed(items)}
    assert latest == {key: projections.latest[key] for key in projections.acme}
    # The two hostile records were read, logged and passed over.
    assert "skipped undecodable snapshot" in caplog.text
    assert "skipped snapshot under another key" in caplog.text


async def test_sessions_limits_the_subscription_to_those_sessions(
    projections: Projections,
) -> None:
    expected = projections.written(projections.last)
    assert len(expected) < len(projections.written(projections.acme))

    client = Client(settings=projections.settings)
    chosen = client.subscribe(TENANT, sessions=list(projections.last), from_offset=0)
    items = await collect(chosen, reached(expected))

    assert placed(items) == expected


async def test_resuming_from_saved_positions_yields_only_later_snapshots(
    projections: Projections,
) -> None:
    expected = projections.written(projections.acme)
    client = Client(settings=projections.settings)

    def both_partitions(seen: list[Subscribed]) -> bool:
        return {item.partition for item in seen} == {0, 1}

    before = await collect(client.subscribe(TENANT, from_offset=0), both_partitions)
    saved = {item.partition: item.next_offset for item in before}
    rest = [p for p in expected if p[1] >= saved[p[0]]]
    assert 0 < len(rest) < len(expected)
    after = await collect(client.subscribe(TENANT, from_offset=saved), reached(rest))

    assert placed(after) == rest
    assert placed(before + after) == expected  # nothing missed, nothing twice


async def test_a_partition_the_saved_positions_leave_out_is_read_from_its_beginning(
    projections: Projections,
) -> None:
    expected = projections.written(projections.acme)
    first_partition = [p for p in expected if p[0] == 0]
    end_of_second = max(p[1] for p in expected if p[0] == 1) + 1
    client = Client(settings=projections.settings)

    items = await collect(
        client.subscribe(TENANT, from_offset={1: end_of_second}), reached(first_partition)
    )

    assert placed(items) == first_partition


async def test_an_offset_starts_every_partition_there(projections: Projections) -> None:
    expected = projections.written(projections.acme)
    start = min(max(p[1] for p in expected if p[0] == partition) for partition in (0, 1))
    from_start = [p for p in expected if p[1] >= start]
    assert len(from_start) < len(expected)

    client = Client(settings=projections.settings)
    items = await collect(client.subscribe(TENANT, from_offset=start), reached(from_start))

    assert placed(items) == from_start


@pytest.mark.parametrize("as_datetime", [True, False], ids=["datetime", "epoch-seconds"])
async def test_from_time_yields_the_snapshots_written_since(
    projections: Projections, as_datetime: bool
) -> None:
    since_ms = projections.boundary_s * 1000
    later = {(r.partition, r.offset) for r in projections.records if r.timestamp >= since_ms}
    expected = [p for p in projections.written(projections.acme) if p[:2] in later]
    # The second phase: one more invocation of the two last sessions, nothing else.
    assert {snapshot.session_key for _, _, snapshot in expected} == set(projections.last)
    assert {snapshot.invocations_total for _, _, snapshot in expected} == {2}

    since = (
        datetime.fromtimestamp(projections.boundary_s, UTC)
        if as_datetime
        else projections.boundary_s
    )
    client = Client(settings=projections.settings)
    items = await collect(client.subscribe(TENANT, from_time=since), reached(expected))

    assert placed(items) == expected


async def test_a_partition_the_topic_lacks_is_refused_naming_from_offset(
    projections: Projections,
) -> None:
    client = Client(settings=projections.settings)
    with pytest.raises(InvalidArgumentError, match=r"^from_offset: partition 5 is not one"):
        await collect(client.subscribe(TENANT, from_offset={0: 0, 5: 3}), lambda _: True)


async def test_a_missing_topic_and_an_unreachable_broker_say_so(kafka_bootstrap: str) -> None:
    missing = Client(bootstrap=kafka_bootstrap, topic_prefix=unique_topic("absent"))
    with pytest.raises(TopicMissingError, match=r"absent-[0-9a-f]+\.projections' does not exist"):
        await collect(missing.subscribe(TENANT), lambda _: True)

    (port,) = free_ports(1)
    unreachable = Client(bootstrap=f"127.0.0.1:{port}")
    with pytest.raises(BrokerUnavailableError, match=f"127.0.0.1:{port} unavailable") as failed:
        await collect(unreachable.subscribe(TENANT, connect_timeout_s=5.0), lambda _: True)
    assert failed.value.retriable


def test_the_sync_client_iterates_the_same_snapshots(projections: Projections) -> None:
    expected = projections.written(projections.acme)
    until = reached(expected)
    seen: list[Subscribed] = []

    def follow() -> None:
        with (
            SyncClient(settings=projections.settings) as client,
            contextlib.closing(client.subscribe(TENANT, from_offset=0)) as items,
        ):
            for item in items:
                seen.append(item)
                if until(seen):
                    break

    # A thread of its own bounds the blocking iteration.
    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    reader.join(RECEIVE_TIMEOUT_S)

    assert not reader.is_alive(), f"still reading after {RECEIVE_TIMEOUT_S}s: {len(seen)} items"
    assert placed(seen) == expected
