"""The demo runs the whole pipeline live; what it shows equals a clean fold of its log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxstream.bench.demo import COMPACTION, run_demo
from schemas.kafka.settings import TOPIC_ROLES, KafkaSettings
from streams.projector_settings import ProjectorSettings
from tests.support.kafka import clean_fold, expected_snapshots, read_log

pytestmark = pytest.mark.integration


async def test_the_demo_shows_sessions_compacted_by_the_running_workers(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    lines: list[str] = []
    outcome = await run_demo(
        KafkaSettings(kafka_bootstrap=kafka_bootstrap),
        sessions=2,
        invocations=5,
        run_dir=tmp_path,
        timeout_s=180.0,
        say=lines.append,
    )

    assert outcome.settled()
    assert sorted(outcome.appended) == sorted(outcome.snapshots)
    assert len(outcome.appended) == 2
    # Each session was summarized by the summarizer worker and the summary masks its range.
    assert all(count >= 1 for count in outcome.summaries.values())
    assert all(s.boundary is not None for s in outcome.snapshots.values())
    # What the demo showed equals the core's clean fold of the log it left behind.
    settings = ProjectorSettings(
        kafka_bootstrap=kafka_bootstrap, topic_prefix=outcome.prefix, compaction=COMPACTION
    )
    log = await read_log(kafka_bootstrap, settings.topic("events"))
    assert outcome.snapshots == expected_snapshots(clean_fold(settings, log))
    summaries_shown = [line for line in lines if line.startswith("summary ")]
    assert len(summaries_shown) == sum(outcome.summaries.values())
    assert any(line.startswith("projection ") and "masks" in line for line in lines)
    # Its last line names every topic of its own deployment; counts agree with their nouns.
    assert lines[-1] == f"topics     {outcome.prefix}.{{{','.join(TOPIC_ROLES)}}}"
    assert not re.search(r"\b1 (summaries|invocations|context items|events)\b", "\n".join(lines))
