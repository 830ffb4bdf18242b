"""pytest plugin of mutation runs (``-p tests.mutation.pytest_plugin``, set by the runner).

A mutant's tests stop at the first failure (mutmut runs them with ``-x``), and a surviving
mutant runs every test that reaches its function, so the run's time is spent mostly in the large
properties. Two things make it affordable on two cores:

* the tests run fastest first, by the durations mutmut recorded in its clean run
  (``mutmut-stats.json``): a mutant an example test kills never waits for a property;
* every hypothesis property runs at most ``CTXSTREAM_MUTATION_EXAMPLES`` examples (default
  :data:`DEFAULT_EXAMPLES`), derandomized, without shrinking: a failing example kills the mutant
  whatever its size.

Neither changes what a test asserts; the cap only makes a property search less far than the test
command does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

import pytest
from hypothesis import Phase, settings

DEFAULT_EXAMPLES: Final = 20
STATS_FILE: Final = Path("mutmut-stats.json")


def _durations() -> dict[str, float]:
    if not STATS_FILE.exists():
        return {}
    loaded: dict[str, float] = json.loads(STATS_FILE.read_text()).get("duration_by_test", {})
    return loaded


def _cap(item: pytest.Item, examples: int) -> None:
    test = getattr(item, "obj", None)
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if test is None or not isinstance(current, settings):
        return
    test._hypothesis_internal_use_settings = settings(
        current,
        max_examples=min(current.max_examples, examples),
        derandomize=True,
        database=None,
        deadline=None,
        phases=[phase for phase in current.phases if phase is not Phase.shrink],
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Cap every property's examples and order the tests by their recorded duration."""
    examples = int(os.environ.get("CTXSTREAM_MUTATION_EXAMPLES", DEFAULT_EXAMPLES))
    for item in items:
        _cap(item, examples)
    durations = _durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
