"""What an event contributes to long-term memory: text parts only, summaries with their range."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from projections.memory.memory_record import Memory, memory_of, memory_timestamp
from projections.memory.memory_text import memory_text
from schemas.event import Content, Part
from schemas.keys import SessionKey
from tests.support.events import call, event, logged_event, resp, summary_event, text, thought

KEY = SessionKey("acme/support/u42/s7")


def test_text_parts_are_kept_in_order_and_thoughts_calls_and_responses_are_not() -> None:
    parts = [text("Ingrid likes sushi"), thought("plan"), call("c1"), resp("c1"), text("Brandt")]
    record = logged_event(KEY, event("e1", "model", 100.0, parts), offset=7)

    assert memory_of(record, partition=3) == Memory(
        tenant="acme",
        app="support",
        user_id="u42",
        session_key="acme/support/u42/s7",
        memory_id="e1",
        partition=3,
        offset=7,
        author="model",
        role="model",
        timestamp=100.0,
        kind="event",
        covered=None,
        text="Ingrid likes sushi\nBrandt",
    )


@pytest.mark.parametrize(
    "parts",
    [None, [], [thought("only thinking")], [call("c1")], [text("   \n ")], [text("")]],
    ids=["no content", "no parts", "thought only", "call only", "blank text", "empty text"],
)
def test_an_event_without_text_contributes_nothing(parts: list[dict[str, object]] | None) -> None:
    record = logged_event(KEY, event("e1", "user", 100.0, parts), offset=1)

    assert memory_of(record, partition=0) is None


def test_a_partial_event_contributes_nothing_its_final_event_repeats_it() -> None:
    record = logged_event(KEY, event("e1", "model", 100.0, [text("Hel")], partial=True), offset=1)

    assert memory_of(record, partition=0) is None


def test_a_summary_is_a_memory_of_its_compacted_text_covering_its_range() -> None:
    summary = summary_event("s1", 100.0, 103.0, 104.0, text="The user parked on level 3.")
    memory = memory_of(logged_event(KEY, summary, offset=9), partition=2)

    assert memory is not None
    assert (memory.kind, memory.covered, memory.text) == (
        "summary",
        (100.0, 103.0),
        "The user parked on level 3.",
    )
    assert (memory.memory_id, memory.timestamp, memory.offset) == ("s1", 104.0, 9)


@pytest.mark.parametrize(("start", "end"), [(105.0, 100.0), (math.nan, 103.0)])
def test_a_summary_covering_nothing_is_no_memory(start: float, end: float) -> None:
    summary = summary_event("s1", start, end, 104.0, text="text")

    assert memory_of(logged_event(KEY, summary, offset=9), partition=0) is None


def test_a_summary_of_one_instant_covers_that_instant() -> None:
    summary = summary_event("s1", 100.0, 100.0, 104.0, text="text")
    memory = memory_of(logged_event(KEY, summary, offset=9), partition=0)

    assert memory is not None
    assert (memory.kind, memory.covered) == ("summary", (100.0, 100.0))


@pytest.mark.parametrize("role", [None, ""], ids=["no role", "empty role"])
def test_a_content_without_a_role_gives_a_memory_without_one(role: str | None) -> None:
    content: dict[str, object] = {"parts": [text("hello")]}
    if role is not None:
        content["role"] = role
    record = logged_event(KEY, event("e1", "user", 100.0, content=content), offset=1)
    memory = memory_of(record, partition=0)

    assert memory is not None
    assert (memory.role, memory.text) == (None, "hello")


def test_an_event_without_an_id_is_named_by_its_position() -> None:
    record = logged_event(KEY, event("", "user", 100.0, [text("hello")]), offset=12)
    memory = memory_of(record, partition=4)

    assert memory is not None
    assert memory.memory_id == "offset:4:12"


def test_nul_characters_become_replacement_characters() -> None:
    content = Content(parts=[Part(text="a\x00b"), Part(text="\x00")])

    assert memory_text(content) == "a\ufffdb\n\ufffd"


@pytest.fixture
def tz_berlin() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.usefixtures("tz_berlin")
def test_the_timestamp_is_adks_local_naive_iso_form() -> None:
    # 1700000000.5 is 2023-11-14 22:13:20.5 UTC, 23:13:20.5 in Berlin (CET, UTC+1).
    assert memory_timestamp(1_700_000_000.5) == "2023-11-14T23:13:20.500000"
    assert memory_timestamp(1_700_000_000.5) == datetime.fromtimestamp(1_700_000_000.5).isoformat()  # noqa: DTZ006
