"""The summary event a request gets, in ADK's shape (reference §7.3), and its dead letter."""

from __future__ import annotations

import pytest

from projections.summary_request import summary_request_id
from schemas.codec import decode_dead_letter, decode_envelope, encode
from schemas.event import UsageMetadata
from summarizer_worker.request_dead_letter import request_dead_letter
from summarizer_worker.request_window import request_window
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_envelope import summary_envelope, summary_idempotency_key
from tests.strategies import SESSION, TENANT
from tests.unit.worker_requests import request_for, session


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


def test_a_dead_letter_keeps_the_request_whole_with_its_source() -> None:
    request = request_for(session(1))
    value = encode(request)
    letter = request_dead_letter(
        reason="range not found for request r: offset 3 holds no event",
        stage="summarize",
        topic="p.compaction-requests",
        partition=2,
        offset=41,
        key=SESSION.encode(),
        value=value,
    )
    back = decode_dead_letter(encode(letter))
    assert back == letter
    assert (back.source_topic, back.source_partition, back.source_offset) == (
        "p.compaction-requests",
        2,
        41,
    )
    assert (back.stage, back.original_key, back.original_value) == (
        "summarize",
        SESSION.encode(),
        value,
    )
