"""A long session's state is released as compaction moves on, and its history is read when needed.

On the real broker, on both engines: a session of the core bench's workload
(rolling summaries) grows long enough that the projector writes a
checkpoint of its released projection and deletes the chunks it covers; a
rewind to an early invocation then needs records the projection released,
and the projector reads them from `events`. The oracle is the clean fold of
the log (the core, nothing released): the snapshots must equal it after
each phase, the changelog must hold every applied record once (checkpoint,
then chunks), and a fresh worker taking the table over must fold on to the
clean fold again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from schemas.envelope import Envelope
from tests.conftest import unique_topic
from tests.support.events import envelope, rewind_event, text_event
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    assert_changelog_holds,
    changelog_offsets,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    running_projector,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
CATCH_UP_TIMEOUT_S = 120.0
EVENTS = 600


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_rewind_behind_the_released_state_is_folded_from_the_log(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("history"),
        data_dir=tmp_path / "first",
        engine=engine,
        batch_size=100,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    session = bench_session(EVENTS)
    last = session[-1].envelope.event.timestamp

    async def folded_as_the_core() -> None:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)
        expected = expected_snapshots(clean_fold(settings, log))
        await wait_for_snapshots(settings, expected, CATCH_UP_TIMEOUT_S)
        assert_changelog_holds(await changelog_offsets(kafka_bootstrap, settings), log)

    later: list[Envelope] = [
        envelope(BENCH_SESSION, rewind_event("deep-rewind", "inv5", last + 1.0)),
        envelope(BENCH_SESSION, text_event("after-1", "inv-after", last + 2.0)),
        envelope(BENCH_SESSION, text_event("after-2", "inv-after", last + 3.0, author="agent")),
    ]
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await append_envelopes(kafka_bootstrap, events, [r.envelope for r in session])
        await folded_as_the_core()
        stored = (await changelog_offsets(kafka_bootstrap, settings))[BENCH_SESSION]
        # Released: a checkpoint stands for most of the session, few chunks follow it.
        assert stored.checkpoint_upto > EVENTS // 2
        assert len(stored.chunk_offsets) < EVENTS // 4

        await append_envelopes(kafka_bootstrap, events, later)
        await folded_as_the_core()

    # A fresh worker (empty local store) takes the table over from the changelog: the
    # checkpoint is behind the rewind, so it reads the history again, and folds on.
    fresh = settings.model_copy(update={"data_dir": tmp_path / "fresh"})
    more = [envelope(BENCH_SESSION, text_event("after-3", "inv-more", last + 4.0))]
    async with running_projector(fresh, STARTUP_TIMEOUT_S):
        await append_envelopes(kafka_bootstrap, events, more)
        await folded_as_the_core()
