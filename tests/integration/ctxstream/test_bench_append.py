"""``ctxstream bench append`` runs on the real broker and reports consistent figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from ctxstream.bench.append import AGENTS
from tests.support.bench import run_bench

pytestmark = pytest.mark.integration


async def test_the_benchmark_times_the_client_and_the_plain_producer(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    figures, stdout = await run_bench(kafka_bootstrap, tmp_path, "append", "--events", "300")
    # Every agent appends the same number of events: 300 rounded up to a multiple of AGENTS.
    assert figures["events"] == AGENTS * -(-300 // AGENTS)
    client, raw = figures["client_events_per_s"], figures["raw_producer_events_per_s"]
    assert client > 0
    assert raw > 0
    lines = dict(line.rsplit(None, 1)[0].split(None, 1) for line in stdout.splitlines()[:2])
    assert float(lines["client"].replace(",", "")) == pytest.approx(client, abs=0.05)
    ratio = stdout.splitlines()[2].split()[1]
    assert float(ratio) == pytest.approx(client / raw, abs=5e-4)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        left = [topic for topic in await admin.list_topics() if topic.startswith("bench-append")]
    finally:
        await admin.close()
    assert left == []  # both runs' topics are deleted
