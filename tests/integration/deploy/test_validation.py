"""The deploy/ scripts refuse a port that is not a number 1-65535 before they render or run it.

A port from the environment ends up in server.properties (Kafka) or on the command line that
pg_ctl hands to /bin/sh (PostgreSQL): a newline or a shell word there would add settings or
commands of the caller's choosing. Each case points the script at a folder of its own, checks
that nothing was created there, and stops whatever a broken check would have started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ServiceError, free_ports, run_deploy

pytestmark = pytest.mark.integration

SCRIPT_TIMEOUT_S = 120.0  # a refusal is instant; a broken check could start a service
STOP_TIMEOUT_S = 90.0

# An empty value is not here: it means "the default", like an unset variable.
BAD_PORTS = {
    "newline": "9092\nauto.create.topics.enable=true",
    "command": "$(touch pwned)",
    "words": "9092 -c log_statement=all",
    "name": "port",
    "zero": "0",
    "leading-zero": "070",
    "too-big": "65536",
}


def _refused(script: str, *args: str, env: dict[str, str], message: str) -> None:
    """Runs the script; it must exit with status 1 and say `message` first."""
    with pytest.raises(ServiceError, match=rf"exited with 1:\n{message}"):
        run_deploy(script, *args, env=env, timeout=SCRIPT_TIMEOUT_S)


@pytest.mark.parametrize("case", BAD_PORTS)
@pytest.mark.parametrize("variable", ["CTXSTREAM_KAFKA_PORT", "CTXSTREAM_KAFKA_CONTROLLER_PORT"])
def test_kafka_start_refuses_a_port_that_is_not_a_number(
    session_run_dir: Path, variable: str, case: str
) -> None:
    data = session_run_dir / f"refused-{variable}-{case}"
    port, controller_port = free_ports(2)
    env = {
        "CTXSTREAM_KAFKA_DATA": str(data),
        "CTXSTREAM_KAFKA_PORT": str(port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_FAST": "1",
    }
    try:
        _refused(
            "kafka/start",
            env={**env, variable: BAD_PORTS[case]},
            message=f"kafka: {variable} must be a port number 1-65535",
        )
        assert not data.exists()  # refused before anything was created, let alone rendered
    finally:
        run_deploy("kafka/stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)


@pytest.mark.parametrize("case", BAD_PORTS)
def test_postgres_start_refuses_a_port_that_is_not_a_number(
    session_run_dir: Path, case: str
) -> None:
    folder = session_run_dir / f"refused-postgres-{case}"
    (port,) = free_ports(1)
    env = {"CTXSTREAM_POSTGRES_DIR": str(folder), "CTXSTREAM_POSTGRES_PORT": str(port)}
    try:
        _refused(
            "postgres/start",
            env={**env, "CTXSTREAM_POSTGRES_PORT": BAD_PORTS[case]},
            message="postgres: CTXSTREAM_POSTGRES_PORT must be a port number 1-65535",
        )
        assert not folder.exists()
        assert not Path(f"{folder}.path").exists()
    finally:
        run_deploy("postgres/stop", env=env, timeout=STOP_TIMEOUT_S)


@pytest.mark.parametrize(
    "value", [*BAD_PORTS.values(), "35535"], ids=[*BAD_PORTS, "node-3-controller-past-65535"]
)
def test_kafka_cluster_refuses_a_base_port_that_is_not_a_number(
    session_run_dir: Path, value: str
) -> None:
    folder = session_run_dir / "refused-cluster"
    env = {"CTXSTREAM_CLUSTER_DIR": str(folder)}
    try:
        _refused(
            "kafka/cluster",
            "start",
            env={**env, "CTXSTREAM_CLUSTER_BASE_PORT": value},
            message="kafka: CTXSTREAM_CLUSTER_BASE_PORT must be",
        )
        assert not folder.exists()
    finally:
        run_deploy("kafka/cluster", "stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)
