"""What every benchmark reports: percentiles, figures as JSON, the JSON file and the text.

Pure but for :func:`write_report`. Each ``ctxstream bench X`` writes its figures
as indented JSON to ``--json FILE`` (:func:`figures_json`; a list of per-size
results is ``{"results": [...]}``, :func:`results_json`) and a short text for the
terminal on standard output. Percentiles are nearest-rank (:func:`percentile`).

Example: ``figures_json({"p50_ms": 1.5})`` is ``{"p50_ms": 1.5}`` indented by two, with a
newline at the end.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with `share` of the values at or below it.

    Example: 100 values 1..100 -> p50 50, p99 99; [7.0] -> 7.0 for any share.

    Raises:
        ValueError: `values` is empty or `share` is outside (0, 1].
    """
    if not values or not 0 < share <= 1:
        raise ValueError(f"need values and 0 < share <= 1, got {len(values)} values, {share}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def figures_json(figures: Mapping[str, Any]) -> str:
    """`figures` as the JSON a benchmark writes: indented by two, ending with a newline."""
    return json.dumps(figures, indent=2) + "\n"


def results_json(results: Sequence[DataclassInstance]) -> str:
    """``{"results": [...]}``: each result's fields, in order (:func:`figures_json`)."""
    return figures_json({"results": [asdict(result) for result in results]})


def write_report(json_path: str | None, figures: str, text: str, out: TextIO) -> None:
    """Write `figures` (JSON) to `json_path`, when given, then `text` to `out`."""
    if json_path:
        Path(json_path).write_text(figures, encoding="utf-8")
    out.write(text)
