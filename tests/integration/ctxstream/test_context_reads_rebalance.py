"""A context read sent to a worker that lost the session's partition reaches the new owner.

Two native worker processes of one group: the first owns every partition and
the client learns that; a second joins, the group rebalances and some
partitions move. The client still routes by what it learned: the first
worker refuses (naming the new owner), and the client asks again there.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ctxstream import Client
from projections.contents.contents_request import ContentsRequest
from projections.fold.rebuild import rebuild_contents
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.reads.owners import PartitionOwners
from tests.conftest import free_ports, unique_topic
from tests.support.events import logged_event, text_event
from tests.support.kafka import (
    create_deployment_topics,
    projector_settings,
    start_worker,
    stop_worker,
    wait_for,
)

pytestmark = pytest.mark.integration

CLAIMED_TIMEOUT_S = 120.0  # a cold worker: group join, restore, one claim per partition
REBALANCE_TIMEOUT_S = 120.0  # the first worker notices at its next heartbeat, then both restore
READ_TIMEOUT_S = 30.0


def _one_session_per_partition(partitions: int) -> dict[int, SessionKey]:
    keys: dict[int, SessionKey] = {}
    number = 0
    while len(keys) < partitions:
        key = SessionKey(f"acme/support/u{number}/s{number}")
        keys.setdefault(session_partition(key.encode(), partitions), key)
        number += 1
    return keys


async def test_a_read_sent_to_the_old_owner_is_answered_by_the_new_one(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ctxstream.reads")
    first_port, second_port = free_ports(2)
    base = projector_settings(kafka_bootstrap, unique_topic("reads-rebalance"))
    await create_deployment_topics(base)
    first_address, second_address = f"127.0.0.1:{first_port}", f"127.0.0.1:{second_port}"
    sessions = _one_session_per_partition(base.events_partitions)
    appended: dict[SessionKey, list[LoggedEvent]] = {key: [] for key in sessions.values()}
    owners = PartitionOwners(base)

    async def claimed_by(expected: dict[str, int]) -> bool:
        await owners.refresh()
        addresses = [owners.owner(p) for p in range(base.events_partitions)]
        held = {a: sum(c is not None and c.address == a for c in addresses) for a in expected}
        return all(held[a] >= count for a, count in expected.items())

    async def append(client: Client, key: SessionKey, serial: int) -> Offset:
        author = "user" if serial % 2 == 0 else "agent"
        event = text_event(f"e{serial}", f"inv{serial // 2}", 100.0 + serial, author=author)
        offset = await client.append(key, event)
        appended[key].append(logged_event(key, event, offset))
        return offset

    first = start_worker(
        base.model_copy(update={"query_port": first_port, "data_dir": tmp_path / "w1"}),
        tmp_path / "worker-1.log",
    )
    second = None
    try:
        await wait_for(
            "the first worker's claims",
            lambda: claimed_by({first_address: base.events_partitions}),
            CLAIMED_TIMEOUT_S,
        )
        async with Client(settings=base) as client:
            for key in sessions.values():  # the client learns that the first worker owns all
                offset = await append(client, key, 0)
                contents = await client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)
                assert contents == rebuild_contents(appended[key], ContentsRequest())
            assert not [r for r in caplog.records if "read refused" in r.getMessage()]

            second = start_worker(
                base.model_copy(update={"query_port": second_port, "data_dir": tmp_path / "w2"}),
                tmp_path / "worker-2.log",
            )
            await wait_for(
                "partitions claimed by both workers",
                lambda: claimed_by({first_address: 1, second_address: 1}),
                REBALANCE_TIMEOUT_S,
            )
            moved = {
                partition: key
                for partition, key in sessions.items()
                if (claim := owners.owner(partition)) is not None
                and claim.address == second_address
            }
            assert moved
            for serial, key in enumerate(moved.values(), start=1):
                offset = await append(client, key, serial)
                contents = await client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)
                assert contents == rebuild_contents(appended[key], ContentsRequest())
                snapshot = await client.projection(key, offset, timeout_s=READ_TIMEOUT_S)
                assert snapshot.last_offset == offset
    finally:
        await owners.close()
        stop_worker(first)
        if second is not None:
            stop_worker(second)

    refused = [r for r in caplog.records if "read refused" in r.getMessage()]
    # The first read of a moved session went to the first worker, which named the new owner.
    assert any(
        f"worker={first_address} owner={second_address}" in r.getMessage() for r in refused
    ), [r.getMessage() for r in refused]
    assert first.returncode == 0
    assert second is not None
    assert second.returncode == 0
