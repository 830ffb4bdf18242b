"""What a request gets: its summary event (reference §7.3), room for its text, a refusal."""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.compaction.summary_request import refusal_envelope
from projections.event_kinds import refused_request_id, summary_request_id
from schemas.codec import decode_envelope, encode
from schemas.event import UsageMetadata
from schemas.keys import TenantId
from summarizer_worker.request_window import request_window
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_envelope import (
    empty_summary_envelope,
    summary_envelope,
    summary_idempotency_key,
)
from summarizer_worker.summary_room import (
    ELLIPSIS,
    MAX_SUMMARY_RECORD_BYTES,
    fit_summary_text,
    json_text_bytes,
    text_room_bytes,
)
from tests.support.events import SESSION, TENANT, request_for, request_with, session

IDS: Final = {"producer_id": "summarizer/w1", "event_id": "ev-1", "invocation_id": "inv-1"}


def test_the_summary_event_has_adks_shape_and_names_its_request() -> None:
    log = session(2)
    request = request_for(log[2:7])
    window = request_window(request, {r.offset: r for r in log})
    usage = UsageMetadata(prompt_token_count=120, candidates_token_count=30)
    envelope = summary_envelope(
        request,
        window,
        SummaryResult(text="the user asked twice", usage=usage),
        producer_id="summarizer/w1",
        event_id="ev-1",
        invocation_id="inv-1",
        timestamp=500.0,
    )
    event = envelope.event
    assert (envelope.tenant, envelope.session_key) == (TENANT, SESSION)
    assert envelope.producer_id == "summarizer/w1"
    assert envelope.idempotency_key == f"summary:{request.request_id}"
    assert (event.id, event.invocation_id, event.timestamp) == ("ev-1", "inv-1", 500.0)
    assert (event.author, event.content, event.isolation_scope) == ("user", None, None)
    assert event.usage_metadata == usage
    compaction = event.actions.compaction
    assert compaction is not None
    assert (compaction.start_timestamp, compaction.end_timestamp) == (102.0, 112.0)
    assert compaction.compacted_content.role == "model"
    assert [p.text for p in compaction.compacted_content.parts or []] == ["the user asked twice"]
    assert summary_request_id(event) == request.request_id
    assert decode_envelope(encode(envelope)) == envelope


def test_an_empty_window_has_no_summary() -> None:
    request = request_for(session(1))
    with pytest.raises(ValueError, match="empty window"):
        summary_envelope(
            request,
            (),
            SummaryResult(text="x"),
            producer_id="p",
            event_id="e",
            invocation_id="i",
            timestamp=1.0,
        )


def test_the_idempotency_key_is_the_request_id_prefixed() -> None:
    assert summary_idempotency_key("9f2c") == "summary:9f2c"


def test_the_empty_envelope_is_the_summary_envelope_without_its_text() -> None:
    log = session(2)
    request = request_for(log[2:7])
    window = request_window(request, {r.offset: r for r in log})
    usage = UsageMetadata(prompt_token_count=120, candidates_token_count=30)
    text = 'a "quoted" summary\n'
    full = summary_envelope(
        request, window, SummaryResult(text=text, usage=usage), timestamp=500.0, **IDS
    )
    empty = empty_summary_envelope(request, timestamp=500.0, usage=usage, **IDS)
    assert len(encode(full)) == len(encode(empty)) + json_text_bytes(text)
    assert text_room_bytes(empty) == MAX_SUMMARY_RECORD_BYTES - len(encode(empty))


@pytest.mark.parametrize(
    "changes",
    [{"tenant": TenantId("evil")}, {"request_id": "r" * 300}],
    ids=["tenant-does-not-own-the-session", "id-too-long-for-the-idempotency-key"],
)
def test_no_empty_envelope_answers_a_request_no_valid_answer_can_name(
    changes: dict[str, object],
) -> None:
    with pytest.raises(ValueError, match="validation error"):
        empty_summary_envelope(
            request_with(**changes),
            producer_id="p",
            event_id="e",
            invocation_id="i",
            timestamp=1.0,
        )


def test_a_text_within_both_bounds_is_kept_whole() -> None:
    assert fit_summary_text("short", max_chars=10, room_bytes=100) == "short"


def test_a_text_over_the_length_is_clipped_with_a_mark() -> None:
    assert fit_summary_text("abcdef", max_chars=4, room_bytes=100) == "abc" + ELLIPSIS


def test_a_text_over_the_room_is_cut_to_what_its_json_takes() -> None:
    # Each quote takes two bytes of JSON, the mark three.
    assert fit_summary_text('""""', max_chars=10, room_bytes=7) == '""' + ELLIPSIS
    assert fit_summary_text("\x01" * 10, max_chars=10, room_bytes=20) == "\x01\x01" + ELLIPSIS
    assert fit_summary_text("abc", max_chars=10, room_bytes=2) == ""


@given(st.text(max_size=60), st.integers(1, 80), st.integers(0, 200))
def test_a_fitted_text_never_exceeds_its_bounds(text: str, max_chars: int, room: int) -> None:
    fitted = fit_summary_text(text, max_chars=max_chars, room_bytes=room)
    assert len(fitted) <= max_chars
    assert json_text_bytes(fitted) <= room or fitted == ""
    if fitted and fitted != text:
        assert fitted.endswith(ELLIPSIS)


def test_a_refusal_is_an_event_of_the_requests_session_naming_it() -> None:
    request = request_for(session(1))
    envelope = refusal_envelope(
        request,
        "summarize: summarizer request rejected (HTTP 400)\n\x1b[2J",
        producer_id="summarizer/w1",
        event_id="ev-9",
        timestamp=700.0,
    )
    assert (envelope.tenant, envelope.session_key) == (TENANT, SESSION)
    assert envelope.idempotency_key == f"refused:{request.request_id}"
    assert (envelope.event.id, envelope.event.timestamp) == ("ev-9", 700.0)
    assert refused_request_id(envelope.event) == request.request_id
    assert envelope.event.content is None
    assert envelope.event.actions.compaction is None
    custom = envelope.event.custom_metadata or {}
    reason = custom["ctxstream"]["reason"]
    assert reason.startswith("summarize: summarizer request rejected (HTTP 400)")
    assert "\n" not in reason
    assert "\x1b" not in reason
    assert decode_envelope(encode(envelope)) == envelope


def test_a_refusals_reason_is_cut_to_the_events_limit() -> None:
    envelope = refusal_envelope(
        request_for(session(1)), "x" * 5000, producer_id="p", event_id="e", timestamp=1.0
    )
    reason = (envelope.event.custom_metadata or {})["ctxstream"]["reason"]
    assert len(reason) <= 500
    assert reason.endswith("...")
