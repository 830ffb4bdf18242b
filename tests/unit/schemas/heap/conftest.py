"""Every test here leaves the process's collector as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    """The thresholds, the switch and the frozen objects put back after the test."""
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        if enabled:
            gc.enable()
        else:
            gc.disable()
