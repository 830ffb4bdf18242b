"""Conditional envelopes and creation records: their shape, by hand, and old bytes kept.

Each expected message is written out here; the golden envelopes (written
before ``expected_offset`` existed) must encode to their very bytes again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.codec import decode_envelope, encode
from schemas.creation_mark import creation_event, creation_problem, is_creation
from schemas.errors import DecodeError
from schemas.event import Event

GOLDEN = Path(__file__).parent / "golden"
INT64_MAX = 2**63 - 1


def record(event: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An envelope's JSON for `event` on session ``acme/app/u1/s1``."""
    return {
        "schema_version": 2,
        "tenant": "acme",
        "session_key": "acme/app/u1/s1",
        "producer_id": "p1",
        "idempotency_key": "k1",
        "event": event,
        **fields,
    }


def created(**fields: Any) -> dict[str, Any]:
    """A creation record's event JSON, `fields` over it."""
    event = {
        "id": "c1",
        "author": "ctxstream",
        "timestamp": 5.0,
        "customMetadata": {"ctxstream": {"session_created": True}},
    }
    event.update(fields)
    return event


TEXT = {"id": "e1", "author": "user", "timestamp": 1.0, "content": {"parts": [{"text": "hi"}]}}


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("envelope-v2-*.json")))
def test_envelopes_written_before_the_field_keep_their_exact_bytes(name: str) -> None:
    raw = orjson.dumps(orjson.loads((GOLDEN / name).read_bytes()))
    envelope = decode_envelope(raw)
    assert envelope.expected_offset is None
    assert encode(envelope) == raw
    assert b"expected_offset" not in encode(envelope)


@pytest.mark.parametrize("expected", [-1, 0, 7, INT64_MAX])
def test_an_expected_offset_is_written_and_read_back(expected: int) -> None:
    raw = orjson.dumps(record(TEXT, expected_offset=expected))
    envelope = decode_envelope(raw)
    assert envelope.expected_offset == expected
    assert orjson.loads(encode(envelope))["expected_offset"] == expected
    assert decode_envelope(encode(envelope)) == envelope


@pytest.mark.parametrize("bad", [-2, INT64_MAX + 1, "3", True, 1.0, None])
def test_an_expected_offset_that_is_no_offset_is_refused_naming_the_field(bad: Any) -> None:
    raw = json.dumps(record(TEXT, expected_offset=bad)).encode()
    if bad is None:  # null is the field left out: an unconditional record
        assert decode_envelope(raw).expected_offset is None
        return
    with pytest.raises(DecodeError, match=r"^(invalid envelope: )?expected_offset: "):
        decode_envelope(raw)


def test_a_creation_record_round_trips_with_its_initial_state() -> None:
    event = creation_event(event_id="c1", timestamp=5.0, state={"topic": "trains", "n": 2})
    assert is_creation(event)
    raw = orjson.dumps(record(created(actions={"stateDelta": {"topic": "trains", "n": 2}})))
    decoded = decode_envelope(orjson.dumps({**orjson.loads(raw), "expected_offset": -1}))
    assert decoded.event == event
    empty = creation_event(event_id="c1", timestamp=5.0, state={})
    assert (
        "actions" not in orjson.loads(encode(decoded.model_copy(update={"event": empty})))["event"]
    )


def test_a_malformed_creation_record_is_refused_with_its_reason() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        (
            created(customMetadata={"ctxstream": {"session_created": 1}}),
            "ctxstream.session_created must be true, got int",
        ),
        (
            created(customMetadata={"ctxstream": {"session_created": True, "b": 1, "a": 2}}),
            "a creation record names nothing else under ctxstream (it also names a, b)",
        ),
        (created(author="user"), "a creation record's author is 'ctxstream', got 'user'"),
        (
            created(content={"parts": [{"text": "x"}]}),
            "a creation record has no content and is not partial",
        ),
        (created(partial=True), "a creation record has no content and is not partial"),
        (
            created(actions={"stateDelta": {"k": 1}, "transferToAgent": "a"}),
            "a creation record carries no action but stateDelta (it also carries transferToAgent)",
        ),
        (
            created(actions={"stateDelta": {"k": 1, "temp:x": 2}}),
            "a creation record's stateDelta holds no temp: key (it holds 'temp:x')",
        ),
    ]
    for event_json, reason in cases:
        event = Event.model_validate(event_json)
        assert creation_problem(event) == reason
        assert not is_creation(event)
        raw = orjson.dumps(record(event_json, expected_offset=-1))
        with pytest.raises(DecodeError) as caught:
            decode_envelope(raw)
        assert f"a malformed creation record: {reason}" in str(caught.value)


@pytest.mark.parametrize("expected", [None, 0, 12])
def test_a_creation_record_expecting_anything_but_no_writer_is_refused(
    expected: int | None,
) -> None:
    fields = {} if expected is None else {"expected_offset": expected}
    with pytest.raises(DecodeError) as caught:
        decode_envelope(orjson.dumps(record(created(), **fields)))
    assert f"its expected_offset must be -1, got {expected}" in str(caught.value)
