"""The benchmarks' report helper: nearest-rank percentiles and the JSON and text they write."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxstream.bench.report import figures_json, percentile, results_json, write_report


@dataclass(frozen=True, slots=True)
class _Result:
    events: int
    read_s: float


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (
        50.0,
        99.0,
        100.0,
    )
    assert percentile([7.0], 0.01) == 7.0
    assert percentile([float(v) for v in range(1, 11)], 0.99) == 10.0  # of ten, the largest


def test_percentile_refuses_no_values_and_a_share_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="need values"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="need values"):
        percentile([1.0], 0.0)
    with pytest.raises(ValueError, match="need values"):
        percentile([1.0], 1.5)


def test_figures_are_json_indented_by_two_with_a_newline_at_the_end() -> None:
    assert figures_json({"p50_ms": 1.5, "ratio": 2}) == '{\n  "p50_ms": 1.5,\n  "ratio": 2\n}\n'


def test_results_are_a_list_of_each_results_fields_in_order() -> None:
    text = results_json([_Result(100, 0.5), _Result(1_000, 0.75)])
    assert json.loads(text) == {
        "results": [{"events": 100, "read_s": 0.5}, {"events": 1_000, "read_s": 0.75}]
    }
    assert text == figures_json(json.loads(text))


def test_the_report_goes_to_the_file_and_the_text_to_the_output(tmp_path: Path) -> None:
    out = io.StringIO()
    path = tmp_path / "figures.json"
    write_report(str(path), '{"a": 1}\n', "a 1\n", out)
    assert path.read_text(encoding="utf-8") == '{"a": 1}\n'
    assert out.getvalue() == "a 1\n"


def test_without_a_file_only_the_text_is_written(tmp_path: Path) -> None:
    out = io.StringIO()
    write_report(None, '{"a": 1}\n', "a 1\n", out)
    assert out.getvalue() == "a 1\n"
    assert list(tmp_path.iterdir()) == []
