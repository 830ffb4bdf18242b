"""M1 on the broker: a session whose sliding window is armed but never worth compacting (the
review's probe: content-less invocations, ``compaction_interval=2``) costs the projector one
selection, not one per event, and it still folds exactly what the core folds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxstream.bench.workload import BENCH_SESSION, quiet_session
from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.token_threshold import select_token_threshold_window
from schemas.codec import encode
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    append,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_all,
    read_log,
    running_projector,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0
TIMEOUT_S = 120.0
EVENTS = 600
DECISION = "projections.compaction.decision"


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_armed_trigger_that_never_fires_selects_once(
    kafka_bootstrap: str, tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("armed"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=1,
        compaction={"compaction_interval": 2, "overlap_size": 0},
        compaction_overrides={},
        batch_size=50,  # many batches: the memo must hold across them
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    await append(
        kafka_bootstrap,
        events,
        [(r.envelope.session_key.encode(), encode(r.envelope)) for r in quiet_session(EVENTS)],
    )
    selections = [0]

    def counted(select: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            selections[0] += 1
            return select(*args, **kwargs)

        return run

    monkeypatch.setattr(
        f"{DECISION}.select_post_invocation_window", counted(select_post_invocation_window)
    )
    monkeypatch.setattr(
        f"{DECISION}.select_token_threshold_window", counted(select_token_threshold_window)
    )
    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await wait_caught_up(settings, TIMEOUT_S)
        by_projector = selections[0]
        folded = clean_fold(settings, await read_log(kafka_bootstrap, events))
        await wait_for_snapshots(settings, expected_snapshots(folded), TIMEOUT_S)
    projection, requests = folded[BENCH_SESSION]
    assert requests == []  # never worth compacting
    assert projection.invocations.since_compaction == EVENTS  # armed from the third on
    assert by_projector == 1  # not one selection per new invocation
    assert await read_all(kafka_bootstrap, settings.topic("dead-letters")) == []
