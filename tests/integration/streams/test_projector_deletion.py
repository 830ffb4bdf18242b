"""A deletion record on the real broker, on both engines: the session's snapshot becomes a
tombstone, its stored records leave the changelog, later events start it afresh, a restart
(even from an empty data folder) does not resurrect it, and a replay from offset 0 deletes it
again. The oracles are written out by hand: the invocations and context items each
incarnation holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ctxstream import Client
from schemas.deletion_mark import deletion_event
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from tests.conftest import unique_topic
from tests.support.events import envelope, text_event
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    changelog_offsets,
    create_deployment_topics,
    latest_snapshots,
    projector_settings,
    read_all,
    running_projector,
    wait_caught_up,
    wait_for,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
TIMEOUT_S = 90.0
DELETED = SessionKey("acme/support/u1/deleted")
KEPT = SessionKey("acme/support/u1/kept")


def _question(key: SessionKey, number: int, timestamp: float) -> object:
    return envelope(key, text_event(f"q{number}", f"inv{number}", timestamp, f"question {number}"))


async def _appended(bootstrap: str, topic: str, *envelopes: object) -> list[LoggedEvent]:
    return await append_envelopes(bootstrap, topic, envelopes)  # type: ignore[arg-type]


async def _wait_counts(
    bootstrap: str, topic: str, expected: dict[SessionKey, tuple[int, int] | None]
) -> None:
    """Wait until each session's latest snapshot has (invocations, context items); None: none."""

    async def reached() -> bool:
        latest = await latest_snapshots(bootstrap, topic)
        seen = {
            key: (latest[key].invocations_total, latest[key].context_items)
            if key in latest
            else None
            for key in expected
        }
        return seen == expected

    await wait_for(f"snapshots with {expected}", reached, TIMEOUT_S)


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_deleted_session_is_forgotten_and_starts_afresh(
    tmp_path: Path, kafka_bootstrap: str, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("deletion"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=1,
    )
    await create_deployment_topics(settings)
    events, snapshots = settings.topic("events"), settings.topic("projections")
    deletion = envelope(DELETED, deletion_event(event_id="del-1", timestamp=150.0))
    before = await _appended(
        kafka_bootstrap,
        events,
        _question(DELETED, 1, 101.0),
        _question(DELETED, 2, 102.0),
        _question(KEPT, 1, 101.0),
    )
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await _wait_counts(kafka_bootstrap, snapshots, {DELETED: (2, 2), KEPT: (1, 1)})
        (deleted_at,) = await _appended(kafka_bootstrap, events, deletion)
        await _wait_counts(kafka_bootstrap, snapshots, {DELETED: None, KEPT: (1, 1)})
        last = (await read_all(kafka_bootstrap, snapshots))[-1]
        assert (last.key, last.value) == (DELETED.encode(), None)  # a tombstone
        await wait_caught_up(settings, TIMEOUT_S)
        stored = await changelog_offsets(kafka_bootstrap, settings)
        # Only what survives the deletion is stored: its checkpoint, no deleted record.
        assert stored[DELETED].checkpoint_upto == deleted_at.offset
        assert stored[DELETED].chunk_offsets == []
        assert all(record.offset < deleted_at.offset for record in before)

        await _appended(kafka_bootstrap, events, _question(DELETED, 3, 200.0))
        await _wait_counts(kafka_bootstrap, snapshots, {DELETED: (1, 1), KEPT: (1, 1)})

    shutil.rmtree(settings.data_dir, ignore_errors=True)  # restored from the changelog alone
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await _appended(kafka_bootstrap, events, _question(DELETED, 4, 201.0))
        await _wait_counts(kafka_bootstrap, snapshots, {DELETED: (2, 2), KEPT: (1, 1)})

    # A replay from offset 0 folds the deletion again: only the new incarnation is left.
    target = unique_topic("deletion-replayed")
    await Client(settings=settings).replay(target)
    await _wait_counts(kafka_bootstrap, f"{target}.projections", {DELETED: (2, 2), KEPT: (1, 1)})
