"""The conformance runners' dispatch and report (``projections/conformance/__init__.py``).

``ctxstream conformance DIR`` prints :func:`~projections.conformance.diff_of`
for every vector that fails, so the texts a person reads there are pinned
here, written out by hand: the unknown-kind message, the ``error`` a crashing
runner is reported as, and the unified diff of pretty-printed JSON (two-space
indent, sorted keys, non-ASCII kept as is).
"""

from __future__ import annotations

import importlib

import pytest

from projections.conformance import KINDS, actual_for, diff_of, runner_for
from tests.support.vectors import Json, text_content, vector_event

ALL_KINDS = (
    "contents, sliding_window, token_threshold, summarizer_render, session_state, "
    "compaction_decisions"
)

REFUSAL = f"unknown vector kind 'windowing'; expected one of {ALL_KINDS}"


def _contents_vector(expected: Json, text: str = "hello") -> Json:
    """A contents vector of one user message `text`, expecting `expected`."""
    return {
        "id": "contents/900-hand",
        "kind": "contents",
        "input": {"events": [vector_event("e1", "inv1", "user", 1.0, text_content("user", text))]},
        "expected": expected,
    }


# -- runner_for and actual_for ------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_runs_the_run_of_its_own_module(kind: str) -> None:
    module = importlib.import_module(f"projections.conformance.{kind}")
    assert runner_for(kind) is module.run


def test_an_unknown_kind_is_refused_naming_it_and_every_known_kind() -> None:
    with pytest.raises(ValueError, match=r"^unknown vector kind") as refused:
        runner_for("windowing")
    assert str(refused.value) == REFUSAL


def test_actual_for_runs_the_vectors_kind_on_its_input() -> None:
    vector = _contents_vector({"contents": []})
    assert actual_for(vector) == {"contents": [{"parts": [{"text": "hello"}], "role": "user"}]}


# -- diff_of: passing and failing vectors ---------------------------------------


def test_a_vector_whose_expected_is_computed_has_no_diff() -> None:
    vector = _contents_vector({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]})
    assert diff_of(vector) is None


def test_a_differing_expected_is_shown_as_a_unified_diff_of_pretty_json() -> None:
    vector = _contents_vector({"contents": [{"role": "user", "parts": [{"text": "goodbye"}]}]})
    assert diff_of(vector) == "\n".join(
        [
            "--- expected",
            "+++ actual",
            "@@ -3,7 +3,7 @@",
            "     {",
            '       "parts": [',
            "         {",
            '-          "text": "goodbye"',
            '+          "text": "hello"',
            "         }",
            "       ],",
            '       "role": "user"',
        ]
    )


def test_a_missing_entry_is_shown_line_by_line() -> None:
    vector = _contents_vector({"contents": []})
    assert diff_of(vector) == "\n".join(
        [
            "--- expected",
            "+++ actual",
            "@@ -1,3 +1,12 @@",
            " {",
            '-  "contents": []',
            '+  "contents": [',
            "+    {",
            '+      "parts": [',
            "+        {",
            '+          "text": "hello"',
            "+        }",
            "+      ],",
            '+      "role": "user"',
            "+    }",
            "+  ]",
            " }",
        ]
    )


def test_keys_are_sorted_in_the_diff_whatever_order_the_vector_wrote_them() -> None:
    vector = _contents_vector({"zeta": 1, "alpha": 2})
    assert diff_of(vector) == "\n".join(
        [
            "--- expected",
            "+++ actual",
            "@@ -1,4 +1,12 @@",
            " {",
            '-  "alpha": 2,',
            '-  "zeta": 1',
            '+  "contents": [',
            "+    {",
            '+      "parts": [',
            "+        {",
            '+          "text": "hello"',
            "+        }",
            "+      ],",
            '+      "role": "user"',
            "+    }",
            "+  ]",
            " }",
        ]
    )


def test_non_ascii_text_is_shown_as_written() -> None:
    vector = _contents_vector(
        {"contents": [{"parts": [{"text": "déjà vu"}], "role": "user"}]}, text="ça va"
    )
    diff = diff_of(vector)
    assert diff is not None
    assert diff.splitlines()[6:8] == ['-          "text": "déjà vu"', '+          "text": "ça va"']


# -- diff_of: vectors the runner cannot run ------------------------------------------


def test_a_runner_that_crashes_is_reported_as_an_error_entry() -> None:
    vector = {"kind": "contents", "input": {"agent_name": "a"}, "expected": {"contents": []}}
    assert diff_of(vector) == "\n".join(
        [
            "--- expected",
            "+++ actual",
            "@@ -1,3 +1,3 @@",
            " {",
            '-  "contents": []',
            '+  "error": "KeyError: \'events\'"',
            " }",
        ]
    )


def test_a_vector_of_an_unknown_kind_is_reported_with_the_refusal() -> None:
    vector = {"kind": "windowing", "input": {}, "expected": {}}
    assert diff_of(vector) == "\n".join(
        [
            "--- expected",
            "+++ actual",
            "@@ -1 +1,3 @@",
            "-{}",
            "+{",
            f'+  "error": "ValueError: {REFUSAL}"',
            "+}",
        ]
    )


def test_an_error_entry_expected_by_the_vector_passes() -> None:
    vector = {"kind": "contents", "input": {}, "expected": {"error": "KeyError: 'events'"}}
    assert diff_of(vector) is None


def test_a_vector_without_expected_cannot_be_compared() -> None:
    vector = _contents_vector({})
    del vector["expected"]
    with pytest.raises(KeyError, match=r"^'expected'$"):
        diff_of(vector)
