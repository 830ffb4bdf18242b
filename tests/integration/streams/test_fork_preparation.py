"""A revoked partition's fork preparation is cancelled and leaves nothing behind (real broker).

The fork's source is long (its fold, paced, takes seconds), so the
preparation is still running when its partition is revoked.
"""

from __future__ import annotations

import asyncio

from projections.fold.fork import ForkSource, fork_event
from schemas.codec import encode
from schemas.keys import Offset, SessionKey
from streams.batch import SourceRecord
from streams.fork_preparation import ForkPreparations
from tests.conftest import unique_topic
from tests.support.events import envelope, text_event
from tests.support.kafka import append_envelopes, create_deployment_topics, projector_settings

SOURCE = SessionKey("acme/support/u1/source")
FORK = SessionKey("acme/support/u1/forked")
#: The source's records: reading and folding them takes seconds.
SOURCE_RECORDS = 20_000


def _fork_record(partition: int, at: int) -> SourceRecord:
    named = ForkSource(SOURCE, Offset(at), Offset(0))
    fork = envelope(FORK, fork_event(named, event_id="f", timestamp=1.0))
    return SourceRecord("events", partition, 7, FORK.encode(), encode(fork))


async def test_a_revoked_partition_cancels_its_preparation_and_drops_it(
    kafka_bootstrap: str,
) -> None:
    settings = projector_settings(
        kafka_bootstrap, unique_topic("forkprep"), history_read_timeout_s=120.0
    )
    await create_deployment_topics(settings)
    events = [text_event(f"s{i}", "i", 1 + i) for i in range(SOURCE_RECORDS)]
    placed = await append_envelopes(
        kafka_bootstrap, settings.topic("events"), [envelope(SOURCE, e) for e in events]
    )
    preparations = ForkPreparations(settings)
    record = _fork_record(partition=2, at=placed[-1].offset)
    assert preparations.first_unprepared(2, [record], lambda _p, _k: None) == 0
    resumed: list[int] = []
    try:
        preparations.start(
            record, settings.events_partitions, lambda _p, _k: None, lambda: resumed.append(2)
        )
        await asyncio.sleep(0.2)  # reading the source, or folding it
        assert preparations.preparing(2)
        await preparations.revoked({2})
        assert not preparations.preparing(2)
        await asyncio.sleep(0.2)
        assert resumed == []  # the partition is not resumed for a cancelled preparation
        assert preparations.take(2, FORK, 7) is None  # nothing prepared is left
        assert preparations.first_unprepared(2, [record], lambda _p, _k: None) == 0
    finally:
        await preparations.stop()
