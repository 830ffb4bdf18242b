"""`deploy/kafka/start` is idempotent and `deploy/kafka/stop` stops the broker it started."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import free_ports, run_deploy

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 300.0  # a first run also fetches the broker's jars
STOP_TIMEOUT_S = 60.0


def _brokers_with(data: Path) -> list[int]:
    """Pids of every running kafka.Kafka process whose config lives under `data`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "kafka.Kafka" in cmdline and str(data) in cmdline:
            pids.append(int(entry.name))
    return pids


def test_a_second_start_leaves_one_broker_and_stop_stops_it(session_run_dir: Path) -> None:
    data = session_run_dir / "kafka-idempotence"
    port, controller_port = free_ports(2)
    env = {
        "CTXSTREAM_KAFKA_DATA": str(data),
        "CTXSTREAM_KAFKA_PORT": str(port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_FAST": "1",
    }
    try:
        first = run_deploy("kafka/start", env=env, timeout=START_TIMEOUT_S)
        pids = _brokers_with(data)
        second = run_deploy("kafka/start", env=env, timeout=START_TIMEOUT_S)
        assert first == second == f"127.0.0.1:{port}"
        assert len(pids) == 1
        assert _brokers_with(data) == pids
        run_deploy("kafka/stop", env=env, timeout=STOP_TIMEOUT_S)
        assert _brokers_with(data) == []
        assert not os.path.exists(data / "kafka.pid")
    finally:
        run_deploy("kafka/stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)
