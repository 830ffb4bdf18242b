"""pytest plugin of mutation runs (``-p tests.mutation.pytest_plugin``, set by the runner).

A mutant's tests stop at the first failure (mutmut runs them with ``-x``), and a surviving
mutant runs every test that reaches its function, so the run's time is spent mostly in the large
properties. Two things make it affordable on two cores:

* the tests run fastest first, by the durations mutmut recorded in its clean run
  (``mutmut-stats.json``): a mutant an example test kills never waits for a property;
* every hypothesis property runs at most ``CTXSTREAM_MUTATION_EXAMPLES`` examples (default
  :data:`DEFAULT_EXAMPLES`), derandomized, without shrinking: a failing example kills the mutant
  whatever its size;
* each test of a mutant gets a CPU-time limit of its own, mutmut's rule applied to that test
  alone (:data:`TIME_MULTIPLIER` times its clean duration plus :data:`TIME_CONSTANT` seconds);
  past it the mutant's run ends with mutmut's timeout status (:data:`TIMEOUT_EXIT`), which the
  report counts against the score. mutmut's own limit is that rule applied to the sum of all
  the mutant's tests, so a mutant that loops in a function nearly every test reaches waited the
  whole suite's limit (over twenty minutes) where its first test's limit decides it.

None of them changes what a test asserts; the cap only makes a property search less far than the
test command does, and the limit only decides sooner what mutmut would call a timeout.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Final

import pytest
from hypothesis import Phase, settings

DEFAULT_EXAMPLES: Final = 20
STATS_FILE: Final = Path("mutmut-stats.json")

#: mutmut's timeout rule (its ``timeout_multiplier`` and ``timeout_constant`` defaults), per test.
TIME_MULTIPLIER: Final = 15.0
TIME_CONSTANT: Final = 1.0
#: The exit status mutmut reads as "timeout".
TIMEOUT_EXIT: Final = 36
#: What a mutant's name holds (mutmut's clean, forced-failure and stats runs have other names).
MUTANT_MARK: Final = "__mutmut_"


_recorded: dict[str, float] = {}


def _durations() -> dict[str, float]:
    """The clean run's duration of each test, read once it exists (mutmut writes it late)."""
    if not _recorded and STATS_FILE.exists():
        _recorded.update(json.loads(STATS_FILE.read_text()).get("duration_by_test", {}))
    return _recorded


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


def _under_mutant() -> bool:
    return MUTANT_MARK in os.environ.get("MUTANT_UNDER_TEST", "")


def _timed_out(signum: int, frame: FrameType | None) -> None:
    os._exit(TIMEOUT_EXIT)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Run a mutant's test under its own CPU-time limit (see the module's docstring)."""
    duration = _durations().get(item.nodeid) if _under_mutant() else None
    if duration is None:
        yield
        return
    previous = signal.signal(signal.SIGPROF, _timed_out)
    signal.setitimer(signal.ITIMER_PROF, (duration + TIME_CONSTANT) * TIME_MULTIPLIER)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
