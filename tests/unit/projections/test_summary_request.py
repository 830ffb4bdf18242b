"""Request ids in summaries and refusals: empty ids are refused with the reason written out."""

from __future__ import annotations

import re

import pytest

from projections.compaction.summary_request import (
    refusal_envelope,
    refusal_event,
    with_summary_request_id,
)
from projections.event_kinds import refused_request_id
from schemas.event import Content, Part
from tests.support.events import request_for, session, summary_event

EMPTY_ID = "a compaction request id must not be empty"


def test_a_refusal_of_an_empty_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(EMPTY_ID)}$"):
        refusal_event("", "gave up", event_id="x", timestamp=1.0)


def test_a_summary_naming_an_empty_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(EMPTY_ID)}$"):
        with_summary_request_id(summary_event("s", 1.0, 2.0, 3.0), "")


def test_naming_the_request_keeps_other_keys_of_the_projects_metadata() -> None:
    summary = summary_event("s1", 100.0, 101.0, 102.0).model_copy(
        update={"custom_metadata": {"ctxstream": {"note": "kept"}, "tenant": {"x": 1}}}
    )
    named = with_summary_request_id(summary, "req-1")
    assert named.custom_metadata == {
        "ctxstream": {"note": "kept", "compaction_request_id": "req-1"},
        "tenant": {"x": 1},
    }


def test_an_event_with_content_is_no_refusal_whatever_its_metadata() -> None:
    refusal = refusal_event("req-1", "gave up", event_id="n1", timestamp=10.0)
    assert refused_request_id(refusal) == "req-1"
    with_content = refusal.model_copy(
        update={"content": Content(role="model", parts=[Part(text="hello")])}
    )
    assert refused_request_id(with_content) is None


def test_a_refusal_must_name_a_non_empty_string_id() -> None:
    refusal = refusal_event("req-1", "gave up", event_id="n1", timestamp=10.0)
    for named in ("", 5):
        forged = refusal.model_copy(
            update={"custom_metadata": {"ctxstream": {"compaction_refused": named}}}
        )
        assert refused_request_id(forged) is None


def _reason(text: str) -> str:
    envelope = refusal_envelope(
        request_for(session(1)), text, producer_id="p", event_id="e", timestamp=1.0
    )
    return str((envelope.event.custom_metadata or {})["ctxstream"]["reason"])


def test_a_long_reason_keeps_497_characters_and_an_ellipsis_exactly_the_limit() -> None:
    # 500 characters in the event: 497 of the reason, then "..." (500 - 3 = 497).
    assert _reason("x" * 5000) == "x" * 497 + "..."
    assert _reason("y" * 497) == "y" * 497  # at the cut: nothing is dropped, no ellipsis
    assert _reason("z" * 498) == "z" * 497 + "..."


def test_an_empty_reason_is_written_as_no_reason_given() -> None:
    assert _reason("") == "no reason given"
