"""A compaction window's range and its refusal of an empty window, with the message written out."""

from __future__ import annotations

import re

import pytest

from projections.compaction.window import CompactionWindow
from tests.support.events import text_event


def test_the_range_runs_from_the_first_to_the_last_event() -> None:
    events = (text_event("a", "i1", 2.0), text_event("b", "i1", 5.0))
    window = CompactionWindow.of("sliding_window", events, None)
    assert (window.start_timestamp, window.end_timestamp) == (2.0, 5.0)


def test_an_empty_window_is_refused_with_its_reason() -> None:
    message = "a compaction window needs at least one event"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        CompactionWindow.of("token_threshold", (), None)
