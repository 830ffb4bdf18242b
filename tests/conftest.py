"""Fixtures shared by every test folder: the real Kafka broker and PostgreSQL.

Each service comes from the environment when it is given there
(``CTXSTREAM_KAFKA_BOOTSTRAP``, ``CTXSTREAM_POSTGRES_DSN``) and is otherwise
started once per test session with ``deploy/``, on free ports, in a folder of
its own under ``.run/``, and stopped and deleted at the end. A service that
cannot start fails the tests that need it; nothing is ever skipped.

``CTXSTREAM_KAFKA_LAUNCHER=docker`` starts the broker with testcontainers
instead (the optional ``docker`` extra; never the default).

Hypothesis profiles (the core's main properties take their example counts
from the loaded one):

* ``default``: what the test command runs, hypothesis' own defaults
  (:data:`DEFAULT_EXAMPLES` examples per property). With ``CI`` set,
  hypothesis loads its own ``ci`` profile instead: the same counts,
  derandomized, no deadline.
* ``deep``: :data:`DEEP_EXAMPLES` examples, no deadline, large generated
  sessions mixed in (:func:`tests.support.strategies.core_sessions`); derandomized
  like the rest when ``CI`` is set. The core's main properties carry the
  ``core_property`` marker; the test command runs them once more under it
  (``CTXSTREAM_HYPOTHESIS_PROFILE=deep pytest -m core_property``).

``CTXSTREAM_HYPOTHESIS_PROFILE=deep`` selects one (hypothesis' own
``--hypothesis-profile deep`` too, and wins).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from schemas.masked_dsn import masked_dsn

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
RUN = REPO / ".run"

START_TIMEOUT_S = 300.0  # a first run also fetches the broker's jars from Maven Central
STOP_TIMEOUT_S = 60.0  # SIGTERM, up to 30 s of clean shutdown, then SIGKILL
DOCKER_KAFKA_IMAGE = "confluentinc/cp-kafka:7.9.0"  # Confluent Platform 7.9 = Kafka 3.9
DOCKER_START_TIMEOUT_S = 120


#: The environment variable naming the hypothesis profile to load.
PROFILE_VARIABLE = "CTXSTREAM_HYPOTHESIS_PROFILE"
#: Examples per core property under ``default`` (hypothesis' own default count).
DEFAULT_EXAMPLES = 100
#: Examples per core property under ``deep``.
DEEP_EXAMPLES = 3_000

# Profiles are registered before any test module is imported: a property's
# settings take what they leave unset from the profile loaded at that moment.
settings.register_profile("default", settings.get_profile("default"), max_examples=DEFAULT_EXAMPLES)
settings.register_profile(
    "deep",
    # The profile hypothesis chose ("ci" when CI is set, else "default").
    settings.get_profile(settings.get_current_profile_name()),
    max_examples=DEEP_EXAMPLES,
    deadline=None,
    # Large sessions take long to generate and fill much of an example's budget.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
if profile := os.environ.get(PROFILE_VARIABLE):
    settings.load_profile(profile)


class ServiceError(RuntimeError):
    """A deploy/ script failed: the tests that need its service fail with its output."""


def unique_topic(prefix: str = "test") -> str:
    """A topic (or group, or app id) name no other test uses: ``test-<uuid hex>``."""
    return f"{prefix}-{uuid.uuid4().hex}"


def free_ports(count: int) -> list[int]:
    """Ports on 127.0.0.1 that nothing listens on now (chosen by the kernel)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def run_deploy(
    script: str, *args: str, env: Mapping[str, str] | None = None, timeout: float
) -> str:
    """Run a ``deploy/`` script; returns the last line it printed (start scripts: an address).

    Raises:
        ServiceError: the script failed; the message holds the end of its stderr.
    """
    command = [str(DEPLOY / script), *args]
    result = subprocess.run(
        command,
        env={**os.environ, "CTXSTREAM_PYTHON": sys.executable, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise ServiceError(
            f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr[-6000:]}"
        )
    lines = result.stdout.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.fixture(scope="session")
def session_run_dir() -> Iterator[Path]:
    """A folder under ``.run/`` for the services this test session starts (owner-only)."""
    RUN.mkdir(mode=0o700, exist_ok=True)
    path = RUN / f"pytest-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _docker_kafka() -> Iterator[str]:
    # Imported here only: the extra is optional and runs without Docker never need it.
    from testcontainers.community.kafka import KafkaContainer

    image = os.environ.get("CTXSTREAM_KAFKA_IMAGE", DOCKER_KAFKA_IMAGE)
    container = KafkaContainer(image).with_kraft()
    container.start(timeout=DOCKER_START_TIMEOUT_S)
    try:
        yield str(container.get_bootstrap_server())
    finally:
        container.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(session_run_dir: Path) -> Iterator[str]:
    """The bootstrap address of a Kafka broker for the whole test session."""
    if given := os.environ.get("CTXSTREAM_KAFKA_BOOTSTRAP"):
        yield given
        return
    if os.environ.get("CTXSTREAM_KAFKA_LAUNCHER") == "docker":
        yield from _docker_kafka()
        return
    port, controller_port = free_ports(2)
    env = {
        "CTXSTREAM_KAFKA_DATA": str(session_run_dir / "kafka"),
        "CTXSTREAM_KAFKA_PORT": str(port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_FAST": "1",
    }
    try:
        yield run_deploy("kafka/start", env=env, timeout=START_TIMEOUT_S)
    finally:
        # Runs after a failed start too: it kills what the start left behind.
        run_deploy("kafka/stop", "--wipe", env=env, timeout=STOP_TIMEOUT_S)


@pytest.fixture(scope="session")
def postgres_dsn(session_run_dir: Path) -> Iterator[str]:
    """The DSN of a PostgreSQL database ``ctxstream`` for the whole test session.

    Started here, it is the DSN ``deploy/postgres/start`` prints, password included.
    """
    if given := os.environ.get("CTXSTREAM_POSTGRES_DSN"):
        yield given
        return
    (port,) = free_ports(1)
    env = {
        "CTXSTREAM_POSTGRES_DIR": str(session_run_dir / "postgres"),
        "CTXSTREAM_POSTGRES_PORT": str(port),
    }
    try:
        yield run_deploy("postgres/start", env=env, timeout=START_TIMEOUT_S)
    finally:
        run_deploy("postgres/stop", env=env, timeout=STOP_TIMEOUT_S)


@pytest.fixture
def topic() -> str:
    """A fresh topic name for one test."""
    return unique_topic()


@pytest.fixture
def make_topic() -> Callable[[], str]:
    """Makes fresh topic (or group) names, for tests that need several."""
    return unique_topic


def pytest_report_header() -> list[str]:
    """Say which services the run uses, so a CI log shows the broker the tests talked to."""
    kafka = os.environ.get("CTXSTREAM_KAFKA_BOOTSTRAP", "started per session by deploy/kafka/start")
    postgres = os.environ.get(
        "CTXSTREAM_POSTGRES_DSN", "started per session by deploy/postgres/start"
    )
    # A DSN may carry a password: the header (a CI log) shows it masked.
    postgres = masked_dsn(postgres)
    return [f"ctxstream: kafka {kafka}; postgres {postgres}"]
