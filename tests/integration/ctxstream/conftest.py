"""The deployment the subscription and ``tail`` tests read: filled once, by the real projector."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.subscriptions import Projections, build_projections


@pytest.fixture(scope="package")
def projections(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Projections:
    """A `projections` topic the native projector filled (:mod:`tests.support.subscriptions`)."""
    data_dir = tmp_path_factory.mktemp("projector")
    return asyncio.run(build_projections(kafka_bootstrap, data_dir))
