"""The rolling seed: built by the token trigger, carried in requests, rebuilt by the summarizer."""

from __future__ import annotations

import pytest

from projections.compaction.rolling_seed import carried_seed, rebuilt_seed_event, seed_event
from schemas.compaction_request import SummarySeed
from schemas.event import Content, Event, Part
from tests.support.events import summary_event, text_event

PREVIOUS = summary_event("s1", 100.0, 140.0, 141.0, text="the plan so far", branch="root.a")


def test_the_seed_holds_the_summary_text_at_the_summary_start() -> None:
    seed = seed_event(PREVIOUS, invocation_id="fresh")
    assert seed.invocation_id == "fresh"
    assert (seed.author, seed.branch, seed.timestamp) == ("model", "root.a", 100.0)
    assert seed.content == Content(role="model", parts=[Part(text="the plan so far")])


def test_a_raw_event_is_no_seed() -> None:
    with pytest.raises(ValueError, match="'q1' is not a summary event"):
        seed_event(text_event("q1", "i1", 1.0), invocation_id="fresh")


def test_the_request_carries_every_field_but_the_id() -> None:
    carried = carried_seed(seed_event(PREVIOUS, invocation_id="fresh"))
    assert carried == SummarySeed(
        timestamp=100.0,
        author="model",
        branch="root.a",
        content=Content(role="model", parts=[Part(text="the plan so far")]),
    )


def test_a_seed_without_content_is_not_carried() -> None:
    assert carried_seed(Event(author="model", timestamp=1.0)) is None


def test_the_summarizer_rebuilds_the_very_seed_event() -> None:
    seed = seed_event(PREVIOUS, invocation_id="seed-req-1")
    carried = carried_seed(seed)
    assert carried is not None
    assert rebuilt_seed_event(carried, invocation_id="seed-req-1") == seed
