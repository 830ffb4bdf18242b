"""`deploy/kafka/start`: idempotent, stops cleanly, owner-only files, no topic made on first use."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import UnknownTopicOrPartitionError

from tests.conftest import free_ports, run_deploy, unique_topic

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 300.0  # a first run also fetches the broker's jars
STOP_TIMEOUT_S = 60.0
METADATA_WAIT_MS = 3_000  # how long the producer asks for an unknown topic's metadata


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


@dataclass(frozen=True)
class Broker:
    """A broker deploy/kafka/start started in a data folder that did not exist before."""

    bootstrap: str
    created: Path  # the first folder the script had to create (the data folder's parent)


@pytest.fixture(scope="module")
def fresh_broker(session_run_dir: Path) -> Iterator[Broker]:
    """A broker of this module; its data folder and that folder's parent are made by start."""
    created = session_run_dir / "fresh"
    port, controller_port = free_ports(2)
    env = {
        "CTXSTREAM_KAFKA_DATA": str(created / "kafka"),
        "CTXSTREAM_KAFKA_PORT": str(port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_FAST": "1",
    }
    try:
        yield Broker(run_deploy("kafka/start", env=env, timeout=START_TIMEOUT_S), created)
    finally:
        run_deploy("kafka/stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)


def test_the_brokers_folders_and_files_are_the_owners_only(fresh_broker: Broker) -> None:
    """Folders 700, files without group or other bits: Kafka's logs and data included."""
    entries = [fresh_broker.created]
    for folder, dirs, files in os.walk(fresh_broker.created):
        entries += [Path(folder, name) for name in (*dirs, *files)]
    names = {path.name for path in entries}
    # The walk saw what the broker wrote, not an empty folder.
    assert {"server.properties", "meta.properties", "server.log", "kafka.pid"} <= names
    modes = {str(path): stat.S_IMODE(path.lstat().st_mode) for path in entries}
    folders = {path for path in entries if path.is_dir() and not path.is_symlink()}
    assert {p: m for p, m in modes.items() if Path(p) in folders and m != 0o700} == {}
    assert {p: oct(m) for p, m in modes.items() if m & 0o077} == {}


async def test_a_topic_is_never_created_on_first_use(fresh_broker: Broker) -> None:
    """A producer's metadata request for an unknown topic is refused, and no topic appears."""
    topic = unique_topic("never-declared")
    producer = AIOKafkaProducer(
        bootstrap_servers=fresh_broker.bootstrap, request_timeout_ms=METADATA_WAIT_MS
    )
    await producer.start()
    try:
        # aiokafka's metadata requests allow auto-creation; only the broker's setting says no.
        with pytest.raises(UnknownTopicOrPartitionError):
            await producer.send_and_wait(topic, b"lost")
    finally:
        await producer.stop()

    admin = AIOKafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap)
    await admin.start()
    try:
        assert topic not in await admin.list_topics()
    finally:
        await admin.close()
