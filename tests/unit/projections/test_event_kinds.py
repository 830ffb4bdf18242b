"""The event kinds the core tells apart: rewinds, summaries, refusals, answered requests."""

from __future__ import annotations

from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.event_kinds import is_rewind, is_summary, refused_request_id, summary_request_id
from tests.support.events import event, rewind_event, summary_event, text_event


def test_a_rewind_names_an_invocation_and_an_empty_name_is_none() -> None:
    assert is_rewind(rewind_event("rw", "inv2", 103.0))
    assert not is_rewind(text_event("e1", "inv1", 100.0))
    empty = event("rw", "user", 103.0, actions={"rewind_before_invocation_id": ""})
    assert not is_rewind(empty)


def test_a_summary_is_neither_a_rewind_nor_a_refusal() -> None:
    summary = summary_event("s", 100.0, 101.0, 102.0)
    assert is_summary(summary)
    assert not is_rewind(summary)
    assert refused_request_id(summary) is None


def test_the_request_a_summary_answers_and_the_one_a_refusal_gives_up() -> None:
    summary = with_summary_request_id(summary_event("s", 100.0, 101.0, 102.0), "r1")
    refusal = refusal_event("r2", "HTTP 400", event_id="x", timestamp=103.0)
    assert summary_request_id(summary) == "r1"
    assert refused_request_id(summary) is None
    assert refused_request_id(refusal) == "r2"
    assert summary_request_id(refusal) is None
    assert not is_summary(refusal)
