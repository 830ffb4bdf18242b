"""The prompt's history bounded in characters: whole when it fits, else seed, note, newest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.render import render_transcript
from schemas.event import Event
from summarizer_worker.prompt_transcript import (
    MIN_TRANSCRIPT_CHARS,
    prompt_transcript,
)
from tests.support.events import call_event, text_event


def _events(count: int, size: int) -> list[Event]:
    return [text_event(f"e{n}", f"inv{n}", 100.0 + n, f"m{n}:" + "w" * size) for n in range(count)]


def test_a_window_that_fits_is_rendered_exactly_as_adk_renders_it() -> None:
    window = [
        text_event("e1", "inv1", 100.0, "Plan my day"),
        call_event("e2", "inv1", 101.0, "c1", name="get_calendar"),
        text_event("e3", "inv1", 102.0, "Standup at 9.", author="planner"),
    ]
    transcript = prompt_transcript(window, 10_000)
    assert transcript.text == render_transcript(window)
    assert transcript.left_out == 0


def test_a_window_over_the_bound_keeps_its_newest_events_and_says_so() -> None:
    # "user: mN:" + 96 = 105 characters a line; the note takes 61.
    transcript = prompt_transcript(_events(10, 96), 500)
    lines = transcript.text.split("\n")
    assert len(transcript.text) <= 500
    assert lines[0] == "[transcript cut to fit the prompt: 6 of 10 events left out]"
    assert [line.split(":")[1] for line in lines[1:]] == [" m6", " m7", " m8", " m9"]
    assert transcript.left_out == 6


def test_a_seed_keeps_its_start_before_the_note() -> None:
    seed = text_event("s", "seed-inv", 90.0, "Earlier summary: " + "s" * 2000, author="model")
    transcript = prompt_transcript([seed, *_events(10, 96)], 1_000)
    lines = transcript.text.split("\n")
    assert len(transcript.text) <= 1_000
    assert lines[0].startswith("model: Earlier summary: sss")
    assert lines[0].endswith("…")
    assert len(lines[0]) <= 500
    assert lines[1].startswith("[transcript cut to fit the prompt:")
    assert lines[-1].startswith("user: m9:")


def test_an_event_larger_than_the_bound_keeps_its_end() -> None:
    huge = text_event("e1", "inv1", 100.0, "start " + "x" * 5_000 + " the end")
    transcript = prompt_transcript([huge], 300)
    assert len(transcript.text) <= 300
    assert transcript.text.endswith(" the end")
    assert "…" in transcript.text
    assert transcript.left_out == 0


def test_a_bound_below_the_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        prompt_transcript([], MIN_TRANSCRIPT_CHARS - 1)


@settings(max_examples=200)
@given(
    st.lists(st.integers(0, 3_000), max_size=12),
    st.booleans(),
    st.integers(MIN_TRANSCRIPT_CHARS, 5_000),
)
def test_the_history_never_exceeds_its_bound(sizes: list[int], seeded: bool, bound: int) -> None:
    window = [
        text_event(f"e{n}", f"inv{n}", 100.0 + n, "t" * size or " ") for n, size in enumerate(sizes)
    ]
    if seeded:
        window.insert(0, text_event("s", "seed", 90.0, "seed " * 300, author="model"))
    transcript = prompt_transcript(window, bound)
    assert len(transcript.text) <= bound
    if transcript.left_out == 0 and len(render_transcript(window)) <= bound:
        assert transcript.text == render_transcript(window)
