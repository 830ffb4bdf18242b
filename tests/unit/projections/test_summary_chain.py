"""The summary chain against masking's whole-list rules, after every summary.

The oracle is :func:`~projections.compaction.masking.surviving_summary_positions` and
:func:`~projections.compaction.masking.coverage` over the whole list of summaries so
far (a sort and a sweep, written apart from the chain's binary searches), and
:func:`~projections.compaction.masking.is_covered` for the membership test.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.masking import (
    coverage,
    is_covered,
    summary_range,
    surviving_summary_positions,
)
from projections.compaction.summary_chain import SummaryChain, summary_chain
from schemas.event import Event
from tests.support.events import summary_event

#: Bounds that meet, touch, nest and invert, with the float edge cases masking reads.
_BOUNDS = [0.0, -0.0, 1.0, 2.0, 3.0, 4.5, 6.0, -1.0, math.inf, -math.inf, math.nan]
_RANGES = st.lists(st.tuples(st.sampled_from(_BOUNDS), st.sampled_from(_BOUNDS)), max_size=14)


def _summaries(ranges: list[tuple[float, float]]) -> list[Event]:
    return [
        summary_event(f"s{number}", start, end, 100.0 + number)
        for number, (start, end) in enumerate(ranges)
    ]


def _check_against_masking(ranges: list[tuple[float, float]]) -> None:
    events = _summaries(ranges)
    chain: SummaryChain[int] = SummaryChain()
    survivors: list[int] = []
    for position, event in enumerate(events):
        start, end = summary_range(event)
        noted = chain.noted(position, start, end)
        expected = surviving_summary_positions(events[: position + 1])
        assert sorted(noted.chain) == expected, f"after {position}"
        assert len(noted.chain) == len(expected)
        assert noted.survives == (position in expected)
        assert sorted(noted.hidden) == sorted(set(survivors) - set(expected))
        assert noted.chain.newest == (max(expected) if expected else None)
        covered = coverage(summary_range(events[p]) for p in expected)
        assert noted.chain.coverage == covered, f"after {position}"
        assert noted.chain.same_coverage(chain) == (covered == chain.coverage)
        for timestamp in _BOUNDS:
            assert noted.chain.covers(timestamp) == is_covered(timestamp, covered)
        chain, survivors = noted.chain, expected
    assert chain == summary_chain([(p, *summary_range(e)) for p, e in enumerate(events)])


@settings(max_examples=400, deadline=None)
@given(_RANGES)
def test_the_chain_keeps_the_survivors_and_coverage_of_the_whole_list(
    ranges: list[tuple[float, float]],
) -> None:
    _check_against_masking(ranges)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30)), min_size=1, max_size=90))
def test_summaries_whose_ends_rise_keep_the_chain_exact_over_long_runs(
    steps: list[tuple[int, int]],
) -> None:
    # The pipeline's order: each end above every earlier one, starts anywhere before it.
    # Long enough for the vectors to be cut back and extended many times.
    end, ranges = 0.0, []
    for back, forward in steps:
        end += forward
        ranges.append((end - back, end))
    _check_against_masking(ranges)


def test_partial_overlaps_survive_and_a_wider_range_hides_them() -> None:
    chain: SummaryChain[str] = SummaryChain()
    chain = chain.noted("a", 100.0, 103.0).chain
    noted = chain.noted("b", 102.0, 108.0)
    assert (list(noted.chain), noted.survives, noted.hidden) == (["a", "b"], True, [])
    assert noted.chain.coverage == coverage([(100.0, 108.0)])
    wider = noted.chain.noted("c", 100.0, 108.0)
    assert (list(wider.chain), wider.hidden) == (["c"], ["a", "b"])
    assert wider.chain.same_coverage(noted.chain)  # no range widened it
    inside = wider.chain.noted("d", 101.0, 102.0)
    assert (inside.survives, inside.chain) == (False, wider.chain)
    again = wider.chain.noted("e", 100.0, 108.0)  # the same range: the later one survives
    assert (list(again.chain), again.hidden, again.chain.newest) == (["e"], ["c"], "e")


def test_a_nan_range_survives_hides_nothing_and_covers_nothing() -> None:
    chain = summary_chain([("a", 1.0, 5.0), ("n", math.nan, 9.0), ("b", 0.0, 6.0)])
    assert list(chain) == ["b", "n"]
    assert chain.newest == "b"
    assert not chain.covers(7.0)
    assert chain.covers(6.0)
    assert len(chain) == 2


def test_an_inverted_range_takes_part_in_containment_but_covers_nothing() -> None:
    chain = summary_chain([("i", 5.0, 3.0)])
    assert list(chain) == ["i"]
    assert not chain.covers(4.0)
    assert chain.coverage == coverage([])
    hidden = chain.noted("w", 2.0, 6.0)
    assert (list(hidden.chain), hidden.hidden) == (["w"], ["i"])
    assert hidden.chain.covers(4.0)
