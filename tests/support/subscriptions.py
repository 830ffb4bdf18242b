"""A deployment whose `projections` topic the real projector filled, for the subscription tests.

:func:`build_projections` appends sessions of three tenants with
:class:`ctxstream.Client`, runs the native projector until it has committed
them, puts two hostile records on `projections` (bytes that are no snapshot,
and another tenant's real snapshot under an ``acme`` key), notes the time,
appends one more invocation to the two ``acme`` sessions that end the two
partitions, and stops the projector. What it leaves is read back as it is
(:attr:`Projections.records`), and the tests compare what a subscriber sees
with the projector's own records of the sessions it asked for.

Sessions: four of ``acme`` (the subscribed tenant; ``last[0]`` and
``last[1]`` among them, one per partition), two of ``other`` and two of
``acme-eu`` (an id that starts with ``acme``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka.structs import ConsumerRecord

from ctxstream import Client, Subscribed
from schemas.codec import decode_projection_snapshot
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey
from schemas.projection_snapshot import ProjectionSnapshot
from tests.conftest import unique_topic
from tests.support.kafka import (
    append,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    invocation_rows,
    projector_settings,
    read_all,
    read_log,
    running_projector,
    wait_caught_up,
)

TENANT: Final = "acme"
PARTITIONS: Final = 2
STARTUP_TIMEOUT_S: Final = 60.0  # joining the group, creating the changelog
CATCH_UP_TIMEOUT_S: Final = 90.0  # folding the sessions and committing their offsets
RECEIVE_TIMEOUT_S: Final = 30.0  # a subscriber reading the whole topic on a cold broker
CLOCK_STEP_S: Final = 0.05  # keeps the phases' record timestamps apart

#: Where a subscribed item was read, and what it holds.
Placed = tuple[int, int, ProjectionSnapshot]


@dataclass(frozen=True)
class Projections:
    """What :func:`build_projections` left on the deployment `settings` name."""

    settings: KafkaSettings
    records: list[ConsumerRecord[Any, Any]]
    """Every committed record of `projections`, in partition then offset order."""
    hostile: frozenset[tuple[int, int]]
    """The (partition, offset) of the two records the test put there by hand."""
    boundary_s: float
    """A time after every record of the first phase and before every later one."""
    last: tuple[SessionKey, SessionKey]
    """The ``acme`` sessions appended to last, on partitions 0 and 1."""
    acme: tuple[SessionKey, ...]
    """Every ``acme`` session."""
    latest: dict[SessionKey, ProjectionSnapshot]
    """Each session's snapshot as a clean fold of its log makes it."""

    def written(self, sessions: Iterable[str]) -> list[Placed]:
        """The projector's records of `sessions`: what a subscriber of them sees from 0."""
        keys = {key.encode() for key in sessions}
        return [
            (r.partition, r.offset, decode_projection_snapshot(r.value))
            for r in self.records
            if r.key in keys and (r.partition, r.offset) not in self.hostile
        ]


def placed(items: Iterable[Subscribed]) -> list[Placed]:
    """Items as (partition, offset, snapshot), in partition then offset order; no deletion."""
    return sorted(
        (
            (item.partition, item.offset, item.snapshot)
            for item in items
            if item.snapshot is not None
        ),
        key=lambda p: p[:2],
    )


def reached(wanted: Iterable[Placed]) -> Callable[[list[Subscribed]], bool]:
    """`until` for :func:`collect`: the items include the last of `wanted` in each partition.

    Within a partition items come in offset order, so by then every earlier
    record of the partition was read (and yielded or left out).
    """
    last: dict[int, int] = {}
    for partition, offset, _ in wanted:
        last[partition] = max(offset, last.get(partition, -1))

    def done(items: list[Subscribed]) -> bool:
        seen = {(item.partition, item.offset) for item in items}
        return all((partition, offset) in seen for partition, offset in last.items())

    return done


async def collect(
    items: AsyncGenerator[Subscribed, None], until: Callable[[list[Subscribed]], bool]
) -> list[Subscribed]:
    """The items of a subscription until `until` holds; fails after :data:`RECEIVE_TIMEOUT_S`."""
    seen: list[Subscribed] = []
    async with contextlib.aclosing(items), asyncio.timeout(RECEIVE_TIMEOUT_S):
        async for item in items:
            seen.append(item)
            if until(seen):
                break
    return seen


def _sessions(tenant: str, count: int) -> list[SessionKey]:
    return [SessionKey(f"{tenant}/support/u{n}/s{n}") for n in range(count)]


def _last_by_partition(sessions: Iterable[SessionKey]) -> tuple[SessionKey, SessionKey]:
    """The first of `sessions` on each of the two partitions."""
    first: dict[int, SessionKey] = {}
    for key in sessions:
        first.setdefault(session_partition(key.encode(), PARTITIONS), key)
    return first[0], first[1]


async def _append_invocation(client: Client, sessions: Iterable[SessionKey], number: int) -> None:
    for index, key in enumerate(sessions):
        rows = invocation_rows(index, number, 1_000.0 + number * 10, prompt_tokens=100)
        await client.append_many(key, rows)


async def build_projections(bootstrap: str, data_dir: Path) -> Projections:
    """Fill a fresh deployment's `projections` topic through the real projector (see above)."""
    settings = projector_settings(
        bootstrap, unique_topic("subscribe"), partitions=PARTITIONS, data_dir=data_dir
    )
    await create_deployment_topics(settings)
    topic = settings.topic("projections")
    acme = tuple(_sessions(TENANT, 4))
    last = _last_by_partition(acme)
    sessions = [*acme, *_sessions("other", 2), *_sessions("acme-eu", 2)]
    async with running_projector(settings, STARTUP_TIMEOUT_S), Client(settings=settings) as client:
        await _append_invocation(client, sessions, 1)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        other = next(r for r in await read_all(bootstrap, topic) if r.key.startswith(b"other/"))
        hostile = await append(
            bootstrap,
            topic,
            [(last[0].encode(), b"not a snapshot"), (acme[-1].encode(), other.value)],
        )
        await asyncio.sleep(CLOCK_STEP_S)
        boundary_s = time.time()
        await asyncio.sleep(CLOCK_STEP_S)

        await _append_invocation(client, last, 2)
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
    records = await read_all(bootstrap, topic)
    # What `reached` relies on: each partition ends with a snapshot of a `last` session.
    ends = {record.partition: record.key for record in records}
    assert ends == {0: last[0].encode(), 1: last[1].encode()}, ends
    log = await read_log(bootstrap, settings.topic("events"))
    return Projections(
        settings=settings,
        records=records,
        hostile=frozenset(hostile),
        boundary_s=boundary_s,
        last=last,
        acme=acme,
        latest=expected_snapshots(clean_fold(settings, log)),
    )
