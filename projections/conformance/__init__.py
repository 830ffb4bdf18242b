"""Replay ADK's recorded conformance vectors against the core. Pure: no I/O.

A vector is one JSON object (see the conformance README): an ``input`` and the
``expected`` value ADK produced. Each kind has a module in this package with a
``run(vector_input) -> dict`` that computes the same shape from the core; the
comparison is equality of JSON values (dict key order never matters, list
order always does).
"""

from __future__ import annotations

import difflib
import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

KINDS: Final = (
    "contents",
    "sliding_window",
    "token_threshold",
    "summarizer_render",
    "session_state",
    "compaction_decisions",
)

Runner = Callable[[Mapping[str, Any]], dict[str, Any]]


def runner_for(kind: str) -> Runner:
    """The function that computes the ``expected`` value of vectors of `kind`.

    Raises:
        ValueError: `kind` is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown vector kind {kind!r}; expected one of {', '.join(KINDS)}")
    module = importlib.import_module(f"projections.conformance.{kind}")
    run: Runner = module.run
    return run


def actual_for(vector: Mapping[str, Any]) -> dict[str, Any]:
    """What the core computes for one vector, in the shape of its ``expected``."""
    return runner_for(str(vector["kind"]))(vector["input"])


def diff_of(vector: Mapping[str, Any]) -> str | None:
    """A readable diff of expected vs actual, or None when the vector passes."""
    expected = vector["expected"]
    try:
        actual: Any = actual_for(vector)
    except Exception as exc:  # noqa: BLE001 - a crash is reported as this vector's failure
        actual = {"error": f"{type(exc).__name__}: {exc}"}
    if actual == expected:
        return None
    lines = difflib.unified_diff(
        _pretty(expected).splitlines(),
        _pretty(actual).splitlines(),
        fromfile="expected",
        tofile="actual",
        lineterm="",
    )
    return "\n".join(lines)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
