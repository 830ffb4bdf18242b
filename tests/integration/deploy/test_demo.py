"""``deploy/demo`` as a newcomer runs it: the pipeline live, a banner, and its services stopped.

The demo runs on a broker and a PostgreSQL cluster of its own (free ports,
folders of this test), without ``deploy/setup`` (this machine is set up).
At its end the ports it used are free again, so ``ctxstream up`` can follow
it, and nothing it started is left running.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from ctxstream.cli.port_holder import is_taken
from schemas.kafka.settings import TOPIC_ROLES
from tests.conftest import DEPLOY, free_ports
from tests.integration.ctxstream.test_up import processes_naming

pytestmark = pytest.mark.integration

DEMO_TIMEOUT_S: Final = 600.0  # a cold broker, PostgreSQL's initdb, the demo's sessions


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The broker's data folder, and a cluster folder the postgres user can reach."""
    parent = Path(tempfile.mkdtemp(prefix="ctxstream-test-demo-", dir="/var/tmp"))
    parent.chmod(0o711)
    kafka = tmp_path / "kafka"
    try:
        yield kafka, parent / "postgres"
    finally:
        for line in processes_naming(kafka) + processes_naming(parent):
            os.kill(int(line.split(":")[0]), 9)
        shutil.rmtree(parent, ignore_errors=True)


def test_the_demo_stops_what_it_started_and_masks_the_password(
    folders: tuple[Path, Path],
) -> None:
    kafka, postgres = folders
    kafka_port, controller_port, postgres_port = free_ports(3)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTREAM_")} | {
        "CTXSTREAM_KAFKA_PORT": str(kafka_port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_KAFKA_DATA": str(kafka),
        "CTXSTREAM_KAFKA_FAST": "1",
        "CTXSTREAM_POSTGRES_PORT": str(postgres_port),
        "CTXSTREAM_POSTGRES_DIR": str(postgres),
        "CTXSTREAM_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }

    done = subprocess.run(
        [str(DEPLOY / "demo"), "--no-setup"],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert f"  kafka      127.0.0.1:{kafka_port}" in out
    assert re.search(
        rf"^  postgres   postgresql://postgres:\*\*\*@127\.0\.0\.1:{postgres_port}/", out, re.M
    ), out
    password = re.compile(r"postgresql://postgres:[0-9a-f]{48}@")
    assert not password.search(out + done.stderr)
    roles = ",".join(TOPIC_ROLES)
    assert re.search(rf"^  topics     demo-[0-9a-f]{{8}}\.\{{{roles}\}}$", out, re.M), out
    assert out.rstrip().endswith("stopped kafka postgres (deploy/demo --keep leaves them running)")
    for port in (kafka_port, controller_port, postgres_port):
        assert not is_taken(port), port
    assert processes_naming(kafka) == []
    assert processes_naming(postgres) == []
