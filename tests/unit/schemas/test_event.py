"""Every event ADK recorded in the conformance vectors survives our schema unchanged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from schemas.codec import decode_envelope, encode
from schemas.envelope import Envelope
from schemas.event import (
    MAX_ID_CHARS,
    Content,
    Event,
    FunctionCall,
    Part,
    content_as_given,
    content_to_json,
    event_to_json,
)
from schemas.keys import SessionKey, TenantId
from tests.support.vectors import CONFORMANCE_DIR, load_vectors

KINDS = ("contents", "sliding_window", "token_threshold", "summarizer_render", "session_state")


def _recorded_events() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{vector['id']}#{event.get('id', index)}", event)
        for kind in KINDS
        for vector in load_vectors(kind)
        for index, event in enumerate(vector["input"]["events"])
    ]


RECORDED = _recorded_events()


def test_the_vectors_were_found() -> None:
    assert len(RECORDED) > 200, f"expected the shared vectors in {CONFORMANCE_DIR}"


@pytest.mark.parametrize(("where", "event"), RECORDED, ids=[where for where, _ in RECORDED])
def test_recorded_event_round_trips_as_json(where: str, event: dict[str, Any]) -> None:
    assert event_to_json(Event.model_validate(event)) == event


@pytest.mark.parametrize(("where", "event"), RECORDED[::7], ids=[w for w, _ in RECORDED[::7]])
def test_recorded_event_round_trips_through_the_topic_codec(
    where: str, event: dict[str, Any]
) -> None:
    envelope = Envelope(
        tenant=TenantId("t"),
        session_key=SessionKey("t/app/u/s"),
        producer_id="p",
        idempotency_key=where,
        event=Event.model_validate(event),
    )
    wire = orjson.loads(encode(envelope))
    assert wire["event"] == event
    assert decode_envelope(encode(envelope)) == envelope


def test_snake_case_names_are_accepted_too() -> None:
    event = Event.model_validate(
        {"author": "a", "timestamp": 1.0, "invocation_id": "inv9", "long_running_tool_ids": ["x"]}
    )
    assert event.invocation_id == "inv9"
    assert event_to_json(event) == {
        "author": "a",
        "timestamp": 1.0,
        "invocationId": "inv9",
        "longRunningToolIds": ["x"],
    }


def test_unknown_adk_fields_are_kept_verbatim() -> None:
    raw = {"author": "a", "timestamp": 1.0, "groundingMetadata": {"webSearchQueries": ["q"]}}
    assert event_to_json(Event.model_validate(raw)) == raw


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"timestamp": "1.5"}, "timestamp\n  Input should be a valid number"),
        ({"timestamp": True}, "timestamp\n  Input should be a valid number"),
        ({"timestamp": float("inf")}, "timestamp\n  Input should be a finite number"),
        ({"partial": "true"}, "partial\n  Input should be a valid boolean"),
        ({"turnComplete": 1}, "turnComplete\n  Input should be a valid boolean"),
        ({"usageMetadata": {"promptTokenCount": "12"}}, "Input should be a valid integer"),
        ({"usageMetadata": {"totalTokenCount": 12.0}}, "Input should be a valid integer"),
        ({"usageMetadata": {"candidatesTokenCount": -1}}, "greater than or equal to 0"),
        ({"actions": {"artifactDelta": {"a.txt": -1}}}, "greater than or equal to 0"),
        ({"actions": {"artifactDelta": {"a.txt": "2"}}}, "Input should be a valid integer"),
        ({"actions": {"escalate": "yes"}}, "Input should be a valid boolean"),
        (
            {"actions": {"compaction": {"startTimestamp": "-inf", "endTimestamp": 1}}},
            "startTimestamp\n  Input should be a valid number",
        ),
    ],
    ids=lambda value: None if isinstance(value, dict) else value.split("\n")[0],
)
def test_numbers_and_booleans_are_strict(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Event.model_validate({"author": "a", "timestamp": 1.0, **changes})
    assert reason in str(caught.value)


def test_an_integer_timestamp_reads_as_a_float_and_lists_as_tuples() -> None:
    event = Event.model_validate(
        {"author": "a", "timestamp": 7, "longRunningToolIds": ["c1", "c2"], "partial": False}
    )
    assert event.timestamp == 7.0
    assert isinstance(event.timestamp, float)
    assert event.long_running_tool_ids == ("c1", "c2")
    assert event_to_json(event) == {
        "author": "a",
        "timestamp": 7.0,
        "longRunningToolIds": ["c1", "c2"],
        "partial": False,
    }


def test_event_ids_longer_than_the_bound_are_refused() -> None:
    for field in ("id", "invocationId"):
        Event.model_validate({"author": "user", "timestamp": 1.0, field: "i" * MAX_ID_CHARS})
        with pytest.raises(ValidationError, match="at most 256 characters"):
            Event.model_validate(
                {"author": "user", "timestamp": 1.0, field: "i" * (MAX_ID_CHARS + 1)}
            )


def _content_with_extras() -> Content:
    return Content.model_validate(
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}, "text": None}],
            "extraPair": (1, 2),
        }
    )


def test_content_as_given_writes_camel_case_json_of_the_set_fields() -> None:
    written = content_as_given(_content_with_extras())
    assert written == {
        "role": "model",
        "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}, "text": None}],
        "extraPair": [1, 2],
    }
    assert type(written["extraPair"]) is list
    assert content_as_given(Content(parts=[Part(function_call=FunctionCall(name="g"))])) == {
        "parts": [{"functionCall": {"name": "g"}}]
    }


def test_content_to_json_writes_camel_case_json_without_nulls() -> None:
    written = content_to_json(_content_with_extras())
    assert written == {
        "role": "model",
        "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}],
        "extraPair": [1, 2],
    }
    assert type(written["extraPair"]) is list
