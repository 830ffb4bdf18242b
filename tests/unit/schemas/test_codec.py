"""The codec is the error boundary: every bad record becomes a DecodeError with its reason."""

from __future__ import annotations

import unicodedata
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.codec import (
    MAX_RECORD_BYTES,
    RETAINED_BYTES_PER_NODE,
    RETAINED_BYTES_PER_RECORD,
    decode_compaction_request,
    decode_dead_letter,
    decode_envelope,
    decode_envelope_sized,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest, compaction_request_id
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import Content, Event, FunctionCall, FunctionResponse, Part
from schemas.keys import Offset, SessionKey, TenantId
from schemas.log_text import UNSAFE_CATEGORIES
from schemas.projection_snapshot import ProjectionSnapshot, TokenUsage


def _envelope_json(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": 2,
        "tenant": "acme",
        "session_key": "acme/app/u1/s1",
        "producer_id": "runner-1",
        "idempotency_key": "acme/app/u1/s1#e1",
        "event": {"id": "e1", "author": "user", "timestamp": 100.0},
    }
    record.update(changes)
    return record


def _reason(raw: bytes, **kwargs: Any) -> str:
    with pytest.raises(DecodeError) as caught:
        decode_envelope(raw, **kwargs)
    return str(caught.value)


def test_a_valid_envelope_decodes() -> None:
    envelope = decode_envelope(orjson.dumps(_envelope_json()))
    assert envelope.session_key == "acme/app/u1/s1"
    assert envelope.event.timestamp == 100.0


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not json at all", "not JSON"),
        (b"", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "expected a JSON object, got an array"),
        (b'"text"', "expected a JSON object, got a string"),
        (b"null", "expected a JSON object, got null"),
        (orjson.dumps(_envelope_json(schema_version=3)), "unknown schema_version 3"),
        (orjson.dumps(_envelope_json(schema_version="2")), "schema_version must be an integer"),
        (orjson.dumps({"tenant": "x"}), "v1 envelope without a string session_key"),
        (orjson.dumps(_envelope_json(event={"author": "u"})), "event.timestamp: Field required"),
        (
            orjson.dumps(_envelope_json(event={"author": "u", "timestamp": "late"})),
            "event.timestamp: Input should be a valid number",
        ),
        (
            orjson.dumps(_envelope_json(event={"author": 7, "timestamp": 1.0})),
            "event.author: Input should be a valid string (got 7)",
        ),
        (orjson.dumps(_envelope_json(producer_id="")), "producer_id: String should have at least"),
        (orjson.dumps(_envelope_json(surprise=1)), "surprise: Extra inputs are not permitted"),
        (
            orjson.dumps(_envelope_json(session_key="acme/app/u1")),
            "invalid session key 'acme/app/u1': has 3 '/'-separated parts",
        ),
        (
            orjson.dumps(_envelope_json(session_key="other/app/u1/s1")),
            "tenant 'acme' does not own session 'other/app/u1/s1'",
        ),
        (
            orjson.dumps(
                _envelope_json(
                    event={
                        "author": "u",
                        "timestamp": 1.0,
                        "actions": {"compaction": {"startTimestamp": 1.0}},
                    }
                )
            ),
            "event.actions.compaction.endTimestamp: Field required",
        ),
    ],
)
def test_a_malformed_record_says_what_is_wrong(raw: bytes, reason: str) -> None:
    assert reason in _reason(raw)


def test_an_oversized_record_is_rejected_before_parsing() -> None:
    raw = b" " * (MAX_RECORD_BYTES + 1)
    assert _reason(raw) == f"record of {MAX_RECORD_BYTES + 1} bytes exceeds the limit of 1000000"


def test_a_record_key_that_differs_from_the_session_is_rejected() -> None:
    raw = orjson.dumps(_envelope_json())
    assert "differs from the envelope's session_key" in _reason(raw, record_key=b"acme/app/u1/s2")
    assert "record key is not UTF-8" in _reason(raw, record_key=b"\xff")
    assert decode_envelope(raw, record_key=b"acme/app/u1/s1").event.id == "e1"


def test_the_sized_decode_charges_the_record_and_its_values() -> None:
    raw = orjson.dumps(_envelope_json())
    envelope, size = decode_envelope_sized(raw, record_key=b"acme/app/u1/s1")
    assert envelope == decode_envelope(raw)
    # root, 5 envelope fields, event and its 3 fields
    assert size == len(raw) + RETAINED_BYTES_PER_RECORD + 10 * RETAINED_BYTES_PER_NODE


def test_the_sized_decode_checks_the_record_key_too() -> None:
    raw = orjson.dumps(_envelope_json())
    with pytest.raises(DecodeError, match="differs from the envelope's session_key"):
        decode_envelope_sized(raw, record_key=b"acme/app/u1/s2")


def test_a_reason_quoting_the_record_key_is_one_bounded_line() -> None:
    raw = orjson.dumps(_envelope_json())
    reason = _reason(raw, record_key=("acme/\n\u202e" + "k" * 5000).encode())
    assert "\n" not in reason
    assert "\u202e" not in reason
    assert "acme/\\n\\u202ekkk" in reason  # repr escapes both
    assert len(reason) < 300


def test_many_errors_are_summarized() -> None:
    raw = orjson.dumps({"schema_version": 2})
    reason = _reason(raw)
    assert reason.count("Field required") == 5
    assert "and" not in reason.split("Field required")[-1]


_text = st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s and s == s.strip())
_printable = _text.filter(
    lambda s: (
        s not in {".", ".."} and all(unicodedata.category(c) not in UNSAFE_CATEGORIES for c in s)
    )
)
_json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=20)
)
_json_object = st.dictionaries(st.text(max_size=8), _json_scalar, max_size=4)
_part = st.one_of(
    st.builds(Part, text=st.text(max_size=40)),
    st.builds(Part, text=st.text(max_size=40), thought=st.just(True)),
    st.builds(
        Part,
        function_call=st.builds(
            FunctionCall, id=st.text(max_size=8), name=_text, args=_json_object
        ),
    ),
    st.builds(
        Part,
        function_response=st.builds(
            FunctionResponse, id=st.text(max_size=8), name=_text, response=_json_object
        ),
    ),
)
_event = st.builds(
    Event,
    id=st.text(max_size=10),
    invocation_id=st.text(max_size=10),
    author=_text,
    branch=st.none() | st.text(max_size=20),
    timestamp=st.floats(min_value=0, max_value=2e9, allow_nan=False),
    content=st.none()
    | st.builds(
        Content, role=st.sampled_from(["user", "model"]), parts=st.lists(_part, max_size=3)
    ),
)


@st.composite
def envelopes(draw: st.DrawFn) -> Envelope:
    tenant, app, user, session = (draw(_printable) for _ in range(4))
    return Envelope(
        tenant=TenantId(tenant),
        session_key=SessionKey(f"{tenant}/{app}/{user}/{session}"),
        producer_id=draw(_text),
        idempotency_key=draw(_text),
        event=draw(_event),
    )


@given(envelopes())
def test_decode_inverts_encode_for_any_envelope(envelope: Envelope) -> None:
    assert decode_envelope(encode(envelope)) == envelope


def test_every_other_record_round_trips() -> None:
    key = SessionKey("acme/app/u1/s1")
    offsets = (Offset(3), Offset(4), Offset(9))
    request = CompactionRequest(
        request_id=compaction_request_id(key, "sliding_window", offsets),
        tenant=TenantId("acme"),
        session_key=key,
        trigger="sliding_window",
        event_offsets=offsets,
        event_ids=("e1", "e2", "e5"),
        start_timestamp=100.0,
        end_timestamp=105.0,
        decided_at_offset=Offset(12),
    )
    assert decode_compaction_request(encode(request)) == request
    assert (request.start_offset, request.end_offset) == (3, 9)
    snapshot = ProjectionSnapshot(
        tenant=TenantId("acme"),
        session_key=key,
        last_offset=Offset(12),
        invocations_total=3,
        invocations_since_compaction=1,
        token_usage=TokenUsage(last_prompt_tokens=1200, total_prompt_tokens=3000),
        context_items=7,
        context_fingerprint="ab12",
    )
    assert decode_projection_snapshot(encode(snapshot)) == snapshot
    letter = DeadLetter(
        reason="not JSON",
        source_topic="ctxstream.events",
        source_partition=3,
        source_offset=41,
        original_key=b"acme/app/u1/s1",
        original_value=b"\x00\xffbroken",
    )
    assert decode_dead_letter(encode(letter)) == letter
    assert orjson.loads(encode(letter))["original_value"] == "AP9icm9rZW4="


def test_request_ids_are_the_digest_of_their_range_and_range_specific() -> None:
    key = SessionKey("acme/app/u1/s1")
    first = compaction_request_id(key, "token_threshold", (Offset(1), Offset(2)))
    # printf 'acme/app/u1/s1\0token_threshold\0001,2' | sha256sum | cut -c1-32
    assert first == "3c14706206f179f24a6cb09d875756f3"
    assert first != compaction_request_id(key, "token_threshold", (Offset(1), Offset(3)))
    assert first != compaction_request_id(key, "sliding_window", (Offset(1), Offset(2)))
    assert len(first) == 32


def test_a_request_whose_ids_and_offsets_disagree_is_rejected() -> None:
    raw = orjson.dumps(
        {
            "request_id": "r",
            "tenant": "acme",
            "session_key": "acme/app/u1/s1",
            "trigger": "sliding_window",
            "event_offsets": [1, 2],
            "event_ids": ["e1"],
            "start_timestamp": 1.0,
            "end_timestamp": 2.0,
            "decided_at_offset": 2,
        }
    )
    with pytest.raises(DecodeError, match="1 event ids for 2 offsets"):
        decode_compaction_request(raw)
    with pytest.raises(DecodeError, match=r"trigger: Input should be 'sliding_window'"):
        decode_compaction_request(raw.replace(b"sliding_window", b"whenever"))


# ---------------------------------------------------------------------------
# Exact reasons and boundaries, written out by hand


def test_a_record_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    record = orjson.dumps(_envelope_json())
    padded = record + b" " * (1_000_000 - len(record))
    assert len(padded) == 1_000_000
    assert decode_envelope(padded).event.id == "e1"
    assert _reason(padded + b" ") == "record of 1000001 bytes exceeds the limit of 1000000"


def test_a_record_key_that_is_not_utf8_is_named_exactly() -> None:
    assert _reason(orjson.dumps(_envelope_json()), record_key=b"\xff") == "record key is not UTF-8"


def test_a_long_record_key_is_quoted_to_61_characters() -> None:
    reason = _reason(orjson.dumps(_envelope_json()), record_key=b"acme/" + b"k" * 100)
    assert reason == (
        "record key 'acme/" + "k" * 56 + "... differs from the envelope's session_key "
        "'acme/app/u1/s1'"
    )


def test_bytes_that_are_not_json_quote_the_parser() -> None:
    assert _reason(b"not json at all") == (
        "not JSON: invalid literal, expected 'null': line 1 column 1 (char 0)"
    )


def test_any_other_parser_failure_is_not_json_with_its_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def exhausted(raw: bytes) -> object:
        raise MemoryError("no room\nat all")

    monkeypatch.setattr(orjson, "loads", exhausted)
    assert _reason(b"{}") == "not JSON: MemoryError: no room\\x0aat all"


def test_a_failing_bounds_walk_makes_the_record_unreadable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(data: object) -> int:
        raise RecursionError("too deep")

    monkeypatch.setattr("schemas.codec.check_json_bounds", broken)
    # A record the one pass refuses is walked the long way, before it is validated again.
    assert _reason(orjson.dumps(_envelope_json(producer_id=7))) == (
        "unreadable envelope: RecursionError: too deep"
    )


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (KeyError(), "invalid envelope: KeyError"),
        (_Unprintable("hidden"), "invalid envelope: _Unprintable"),
        (ValueError("bad"), "invalid envelope: ValueError: bad"),
    ],
    ids=["empty-message", "broken-str", "plain"],
)
def test_an_exception_is_shown_as_its_type_and_message(
    monkeypatch: pytest.MonkeyPatch, error: Exception, reason: str
) -> None:
    def failing(kind: str, record: dict[str, Any]) -> dict[str, Any]:
        raise error

    monkeypatch.setattr("schemas.codec.upcast", failing)
    assert _reason(orjson.dumps(_envelope_json())) == reason


def test_a_validation_error_that_cannot_be_described_still_gives_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(keys: object) -> str:
        raise TypeError("unprintable location")

    monkeypatch.setattr("schemas.codec.shown_path", broken)
    reason = _reason(orjson.dumps(_envelope_json(producer_id=7)))
    assert reason == "invalid envelope: validation failed"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"true", "expected a JSON object, got a boolean"),
        (b"false", "expected a JSON object, got a boolean"),
        (b"7", "expected a JSON object, got a number"),
        (b"1.5", "expected a JSON object, got a number"),
    ],
)
def test_a_scalar_record_names_its_json_type(raw: bytes, reason: str) -> None:
    assert _reason(raw) == reason


def test_a_missing_field_shows_no_input() -> None:
    assert _reason(orjson.dumps(_envelope_json(event={"author": "u"}))) == (
        "invalid envelope: event.timestamp: Field required"
    )


def test_errors_are_joined_by_semicolons() -> None:
    assert _reason(orjson.dumps(_envelope_json(producer_id=7, idempotency_key=8))) == (
        "invalid envelope: producer_id: Input should be a valid string (got 7); "
        "idempotency_key: Input should be a valid string (got 8)"
    )


@pytest.mark.parametrize(
    ("author", "shown_author"),
    [
        ({}, "an empty object"),
        ({"a": 1}, "an object with keys 'a'"),
        ({"a": 1, "b": 2, "c": 3}, "an object with keys 'a', 'b', 'c'"),
        ({"a": 1, "b": 2, "c": 3, "d": 4}, "an object with keys 'a', 'b', 'c', ..."),
        ({"k" * 30: 1}, "an object with keys '" + "k" * 21 + "..."),
        ({"k" * 20: 1}, "an object with keys '" + "k" * 20 + "'"),
    ],
    ids=["empty", "one-key", "three-keys", "four-keys", "long-key", "key-at-limit"],
)
def test_an_object_input_is_shown_by_its_first_keys(
    author: dict[str, int], shown_author: str
) -> None:
    raw = orjson.dumps(_envelope_json(event={"author": author, "timestamp": 1.0}))
    assert _reason(raw) == (
        f"invalid envelope: event.author: Input should be a valid string (got {shown_author})"
    )


@pytest.mark.parametrize(
    ("timestamp", "shown_timestamp"),
    [
        ("a" * 60, "'" + "a" * 60 + "'"),
        ("a" * 61, "'" + "a" * 61 + "..."),
        # The 62nd character is cut before repr: its quote must not change the quoting.
        ("a" * 61 + "'" + "b" * 5, "'" + "a" * 61 + "..."),
        ("a" * 100, "'" + "a" * 61 + "..."),
    ],
    ids=["at-limit", "one-more", "quote-beyond-limit", "long"],
)
def test_a_text_input_is_quoted_to_61_characters(timestamp: str, shown_timestamp: str) -> None:
    raw = orjson.dumps(_envelope_json(event={"author": "u", "timestamp": timestamp}))
    assert _reason(raw) == (
        f"invalid envelope: event.timestamp: Input should be a valid number (got {shown_timestamp})"
    )
