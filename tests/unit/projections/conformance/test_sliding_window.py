"""The sliding-window runner's shapes (``projections/conformance/sliding_window.py``).

:func:`~projections.conformance.sliding_window.seed_json` and
:func:`~projections.conformance.sliding_window.range_json` give the shape the
vectors record a window's seed and range in (the token-threshold runner uses
them too). The core's seeds always carry the previous summary's content; a
window built by hand shows the shape of one without.
"""

from __future__ import annotations

from projections.compaction.window import CompactionWindow
from projections.conformance.sliding_window import range_json, seed_json
from tests.support.events import bare_event, text_event


def test_a_seed_without_content_is_shown_with_null_content() -> None:
    seed = bare_event("", "seed", 100.0, author="model", branch="root.helper")
    window = CompactionWindow.of("token_threshold", (seed, text_event("e1", "inv1", 103.0)), seed)
    assert seed_json(window) == {
        "timestamp": 100.0,
        "author": "model",
        "branch": "root.helper",
        "content": None,
    }
    assert range_json(window) == {"start_timestamp": 100.0, "end_timestamp": 103.0}


def test_a_seed_is_shown_with_its_content_as_genai_json() -> None:
    seed = text_event("", "seed", 100.0, "earlier summary", author="model")
    window = CompactionWindow.of("token_threshold", (seed, text_event("e1", "inv1", 103.0)), seed)
    assert seed_json(window) == {
        "timestamp": 100.0,
        "author": "model",
        "branch": None,
        "content": {"parts": [{"text": "earlier summary"}], "role": "model"},
    }


def test_a_window_without_seed_and_no_window_show_null() -> None:
    window = CompactionWindow.of("sliding_window", (text_event("e1", "inv1", 103.0),), None)
    assert seed_json(window) is None
    assert seed_json(None) is None
    assert range_json(None) is None
