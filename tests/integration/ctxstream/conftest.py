"""The deployments the front door's tests read.

``projections``: the one the subscription and ``tail`` tests read, filled
once by the real projector. ``deployment`` and ``client``: a deployment of
each read test module's own, served by a native worker process, and a
blocking client of it. ``data``: a ``ctxstream up`` run's data folder.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxstream import SyncClient
from streams.projector_settings import ProjectorSettings
from tests.integration.ctxstream.test_up import processes_naming
from tests.support.read_worker import VIEW_AGENT, serving_worker
from tests.support.subscriptions import Projections, build_projections


@pytest.fixture(scope="package")
def projections(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Projections:
    """A `projections` topic the native projector filled (:mod:`tests.support.subscriptions`)."""
    data_dir = tmp_path_factory.mktemp("projector")
    return asyncio.run(build_projections(kafka_bootstrap, data_dir))


@pytest.fixture(scope="module")
def deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProjectorSettings]:
    """A deployment served by one native worker process, once it claimed every partition.

    Its snapshots describe :data:`~tests.support.read_worker.VIEW_AGENT`'s
    context in the sessions of ``acme/support``.
    """
    folder = tmp_path_factory.mktemp("reads")
    view_agents = {"acme/support": VIEW_AGENT}
    with serving_worker(kafka_bootstrap, folder, "reads", view_agent_names=view_agents) as reads:
        yield reads


@pytest.fixture(scope="module")
def client(deployment: ProjectorSettings) -> Iterator[SyncClient]:
    """A blocking client of the module's deployment."""
    with SyncClient(settings=deployment) as opened:
        yield opened


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    """The run's data folder; whatever still names it at the end is killed (a failed test)."""
    folder = tmp_path / "up"
    yield folder
    for line in processes_naming(folder):
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
