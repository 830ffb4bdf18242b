"""Hostile bytes: the codec raises nothing but DecodeError, and what it accepts it writes again.

Three parts: the review's probes (H1, H2, M4) as explicit tests; the bounds
walk at and beyond each cap; and a property over hostile JSON, built from
scratch and by mutating valid records of every topic, that decoding raises
only ``DecodeError`` with a safe reason, and that whatever decodes encodes and
decodes equal. Last, the retained-size estimate against tracemalloc.
"""

from __future__ import annotations

import gc
import json
import math
import tracemalloc
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from schemas.codec import (
    MAX_RECORD_BYTES,
    decode_compaction_request,
    decode_dead_letter,
    decode_envelope,
    decode_envelope_sized,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest, SummarySeed
from schemas.dead_letter import build_dead_letter
from schemas.envelope import Envelope
from schemas.errors import MAX_DECODE_REASON_CHARS, DecodeError
from schemas.event import (
    Content,
    Event,
    EventActions,
    EventCompaction,
    FunctionCall,
    FunctionResponse,
    Part,
    UsageMetadata,
    content_to_json,
)
from schemas.json_bounds import (
    INT64_MAX,
    INT64_MIN,
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_NODES,
    check_json_bounds,
)
from schemas.keys import Offset, SessionKey, TenantId
from schemas.log_text import UNSAFE_CATEGORIES
from schemas.projection_snapshot import CompactionBoundary, ProjectionSnapshot, TokenUsage

# Per property and record kind: enough to meet every kind of hostile value
# several times, small enough for a 2-core CI machine (a few seconds in all).
EXAMPLES: Final = 60

Decoder = Callable[[bytes], BaseModel]
DECODERS: Final[dict[str, Decoder]] = {
    "envelope": decode_envelope,
    "compaction_request": decode_compaction_request,
    "projection_snapshot": decode_projection_snapshot,
    "dead_letter": decode_dead_letter,
}
KEY: Final = SessionKey("acme/app/u1/s1")


def _assert_safe(reason: str) -> None:
    """A reason fit for one log line: bounded, no control, format or separator character."""
    assert 0 < len(reason) <= MAX_DECODE_REASON_CHARS
    unsafe = [c for c in reason if unicodedata.category(c) in UNSAFE_CATEGORIES]
    assert not unsafe, f"unsafe characters {unsafe!r} in {reason!r}"


def _refused(decode: Decoder, raw: bytes) -> str:
    with pytest.raises(DecodeError) as caught:
        decode(raw)
    reason = str(caught.value)
    _assert_safe(reason)
    return reason


def _envelope_raw(event: bytes = b'{"author":"user","timestamp":1}', **fields: bytes) -> bytes:
    values = {
        b"schema_version": b"2",
        b"tenant": b'"acme"',
        b"session_key": b'"acme/app/u/s"',
        b"producer_id": b'"p"',
        b"idempotency_key": b'"i"',
        b"event": event,
    } | {name.encode(): value for name, value in fields.items()}
    return b"{" + b",".join(b'"' + name + b'":' + value for name, value in values.items()) + b"}"


def _nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


# ---------------------------------------------------------------------------
# The review's probes


def test_h1_a_tenant_nested_1000_deep_is_a_decode_error() -> None:
    reason = _refused(decode_envelope, _envelope_raw(tenant=_nested(1000)))
    assert reason == f"tenant.0.0.0....(64 levels)....0.0: nested deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize("depth", [960, 1023])
def test_h1_any_nesting_orjson_accepts_is_refused_by_the_walk(depth: int) -> None:
    assert "nested deeper than 64" in _refused(
        decode_envelope, _envelope_raw(tenant=_nested(depth))
    )


def test_h1_nesting_orjson_refuses_is_not_json() -> None:
    assert _refused(decode_envelope, _envelope_raw(tenant=_nested(1024))).startswith("not JSON")


def test_h1_a_request_id_nested_1000_deep_is_a_decode_error() -> None:
    raw = (
        b'{"request_id":' + _nested(1000) + b',"tenant":"acme","session_key":"acme/app/u/s",'
        b'"trigger":"sliding_window","event_offsets":[3],"event_ids":["e3"],'
        b'"start_timestamp":1.0,"end_timestamp":1.0,"decided_at_offset":4}'
    )
    assert "request_id.0.0.0" in _refused(decode_compaction_request, raw)


@pytest.mark.parametrize("value", [b'"inf"', b'"-Infinity"', b'"NaN"', b'"1.5"'])
def test_h2_a_timestamp_that_is_a_string_is_refused(value: bytes) -> None:
    raw = _envelope_raw(b'{"author":"user","timestamp":' + value + b"}")
    assert "event.timestamp: Input should be a valid number" in _refused(decode_envelope, raw)


@pytest.mark.parametrize(
    ("count", "reason"),
    [
        (
            b"18446744073709551615",
            "event.usageMetadata.promptTokenCount: integer outside the signed 64-bit range",
        ),
        (b'"99999999999999999999"', "event.usageMetadata.promptTokenCount: Input should be"),
        # orjson reads integers beyond 64 bits as floats; a count must be an int.
        (b"99999999999999999999", "event.usageMetadata.promptTokenCount: Input should be"),
        (b"9223372036854775807", "promptTokenCount: Input should be less than or equal to"),
        (b"-1", "promptTokenCount: Input should be greater than or equal to 0"),
        (b"true", "event.usageMetadata.promptTokenCount: Input should be a valid integer"),
    ],
    ids=["u64-max", "digit-string", "beyond-u64", "int64-max", "negative", "bool"],
)
def test_h2_a_token_count_beyond_its_bound_is_refused(count: bytes, reason: str) -> None:
    event = b'{"author":"model","timestamp":1,"usageMetadata":{"promptTokenCount":' + count + b"}}"
    assert reason in _refused(decode_envelope, _envelope_raw(event))


def test_h2_a_part_extra_nested_300_deep_is_refused() -> None:
    video = b'{"a":' * 300 + b"1" + b"}" * 300
    event = (
        b'{"author":"user","timestamp":1,"content":{"role":"user","parts":'
        b'[{"text":"hi","videoMetadata":' + video + b"}]}}"
    )
    reason = _refused(decode_envelope, _envelope_raw(event))
    assert reason.startswith("event.content.parts.0....")
    assert reason.endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_h2_a_request_with_an_infinite_start_is_refused() -> None:
    raw = (
        b'{"request_id":"r1","tenant":"acme","session_key":"acme/app/u/s",'
        b'"trigger":"sliding_window","event_offsets":[3],"event_ids":["e3"],'
        b'"start_timestamp":"inf","end_timestamp":1.0,"decided_at_offset":4}'
    )
    assert "start_timestamp: Input should be a valid number" in _refused(
        decode_compaction_request, raw
    )


def test_m4_a_forged_line_in_a_field_name_stays_on_one_line() -> None:
    raw = _envelope_raw(**{"x\\nFORGED LINE\\u001b[2J": b"1"})
    reason = _refused(decode_envelope, raw)
    assert reason == (
        "invalid envelope: x\\x0aFORGED LINE\\x1b[2J: Extra inputs are not permitted (got 1)"
    )


def test_m4_m5_a_field_name_of_600000_characters_gives_a_bounded_reason() -> None:
    reason = _refused(decode_envelope, _envelope_raw(**{"k" * 600_000: b"1"}))
    assert reason.startswith("invalid envelope: kkkk")
    assert "Extra inputs are not permitted" in reason
    assert len(reason) < 200


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("bidi", "a\u202eb"),
        ("zero-width", "a\u200bb"),
        ("c1", "a\x85b\x9b[2J"),
        ("separator", "a\u2028b\u2029c"),
        ("private-use", "a\ue000"),
    ],
)
def test_m4_odd_characters_in_a_quoted_input_are_escaped(name: str, value: str) -> None:
    raw = _envelope_raw(b'{"author":"user","timestamp":' + orjson.dumps(value) + b"}")
    assert "event.timestamp: Input should be a valid number (got 'a" in _refused(
        decode_envelope, raw
    )


def test_a_lone_surrogate_escape_is_not_json() -> None:
    raw = _envelope_raw(b'{"author":"\\ud800","timestamp":1}')
    assert _refused(decode_envelope, raw).startswith("not JSON")


def test_many_errors_are_counted_not_listed() -> None:
    event = b'{"author":"user","timestamp":1,"content":{"parts":' + b"[" + b"1," * 59_999 + b"1]}}"
    reason = _refused(decode_envelope, _envelope_raw(event))
    assert reason.endswith("; and 59995 more")
    assert reason.count("Input should be a valid dictionary or instance of Part") == 5


def test_any_other_exception_while_decoding_becomes_a_decode_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def deep(kind: str, record: dict[str, Any]) -> dict[str, Any]:
        raise RecursionError("maximum recursion depth exceeded\nwhile calling")

    monkeypatch.setattr("schemas.codec.upcast", deep)
    reason = _refused(decode_envelope, _envelope_raw())
    assert reason == (
        "invalid envelope: RecursionError: maximum recursion depth exceeded\\x0awhile calling"
    )


def test_a_shown_input_never_renders_a_nested_value() -> None:
    event = b'{"author":' + _nested(60, b"1") + b',"timestamp":1}'
    assert "event.author: Input should be a valid string (got an array of 1 items)" in (
        _refused(decode_envelope, _envelope_raw(event))
    )
    event = b'{"author":{"k\\n1":' + _nested(10) + b',"b":2,"c":3,"d":4},"timestamp":1}'
    assert "(got an object with keys 'k\\n1', 'b', 'c', ...)" in (
        _refused(decode_envelope, _envelope_raw(event))
    )


# ---------------------------------------------------------------------------
# The bounds walk


def _nested_metadata(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def test_a_record_exactly_at_the_depth_cap_decodes_and_encodes_again() -> None:
    # The record is level 1, event 2, customMetadata 3: 61 more levels reach 64.
    event = Event(author="user", timestamp=1.0, custom_metadata=_nested_metadata(61))
    record = Envelope(
        tenant=TenantId("acme"),
        session_key=KEY,
        producer_id="p",
        idempotency_key="i",
        event=event,
    )
    raw = encode(record)
    assert decode_envelope(raw) == record
    assert decode_envelope(encode(decode_envelope(raw))) == record
    deeper = raw.replace(b'"customMetadata":', b'"customMetadata":{"b":', 1)[:-2] + b"}}}"
    assert "nested deeper than 64" in _refused(decode_envelope, deeper)


def test_the_walk_counts_values_and_keeps_64_bit_integers() -> None:
    assert check_json_bounds({"a": [1, 2.5, "x"]}) == 5
    assert check_json_bounds({"a": [INT64_MIN, INT64_MAX, True, None]}) == 6
    assert check_json_bounds("text") == 1


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"a": INT64_MAX + 1}, "a: integer outside the signed 64-bit range"),
        ({"a": [0, INT64_MIN - 1]}, "a.1: integer outside the signed 64-bit range"),
        ({"a": {"b": 2**64 - 1}}, "a.b: integer outside the signed 64-bit range"),
        ({"a": [math.inf]}, "a.0: number is not finite"),
        ({"a": -math.inf}, "a: number is not finite"),
        ([math.nan], "0: number is not finite"),
        (2**64, "<record>: integer outside the signed 64-bit range"),
        ({"k\n\x1b": [[1.5, math.nan]]}, "k\\x0a\\x1b.0.1: number is not finite"),
        ({"a": [0] * (MAX_ITEMS + 1)}, f"a: {MAX_ITEMS + 1} items in one container, at most"),
        (
            {str(n): [0] * (MAX_ITEMS - 1) for n in range(3)},
            f"more than {MAX_NODES} JSON values in one record",
        ),
    ],
    ids=["int64+1", "int64-1", "u64", "inf", "-inf", "nan", "root", "escaped", "items", "nodes"],
)
def test_the_walk_refuses_a_value_beyond_a_bound(value: object, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        check_json_bounds(value)
    assert str(caught.value) == reason or str(caught.value).startswith(reason)


def test_the_walk_admits_exactly_the_caps() -> None:
    at_cap = {"a": [0] * MAX_ITEMS, "b": [0] * (MAX_NODES - MAX_ITEMS - 3)}
    assert check_json_bounds(at_cap) == MAX_NODES
    with pytest.raises(DecodeError, match="more than 125000 JSON values"):
        check_json_bounds({**at_cap, "c": 0})


def test_the_walk_never_recurses() -> None:
    value: list[Any] = []
    for _ in range(200_000):  # far beyond the interpreter's recursion limit
        value = [value]
    with pytest.raises(DecodeError, match="nested deeper than 64 levels"):
        check_json_bounds(value)


def test_the_node_cap_refuses_records_of_bare_punctuation() -> None:
    def zeros(count: int) -> bytes:
        return b"[" + b"0," * (count - 1) + b"0]"

    parts = b"[" + b"{}," * (MAX_ITEMS // 2) + b"{}]"
    many = b'{"author":"user","timestamp":1,"content":{"parts":' + parts + b"},"
    many += b'"customMetadata":{"x":' + zeros(MAX_ITEMS) + b',"y":' + zeros(MAX_ITEMS // 2) + b"}}"
    assert len(_envelope_raw(many)) < MAX_RECORD_BYTES
    assert f"more than {MAX_NODES} JSON values" in _refused(decode_envelope, _envelope_raw(many))


# ---------------------------------------------------------------------------
# The property over hostile JSON

_MARK: Final = "\x00hostile\x00"
_MARK_JSON: Final = orjson.dumps(_MARK)

_boundary_ints = st.sampled_from(
    [0, -1, 1, INT64_MAX, INT64_MAX + 1, INT64_MIN, INT64_MIN - 1, 2**64 - 1, 2**64, 10**20]
)
_number_texts = st.sampled_from(
    [
        b"1e308",
        b"-1e308",
        b"1e400",
        b"-1e400",
        b"5e-324",
        b"1e-400",
        b"-0.0",
        b"1.5",
        b"1E2",
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"nan",
        b"01",
        b"1.",
        b"-",
    ]
)
_numeric_strings = st.sampled_from(
    [
        '"inf"',
        '"-inf"',
        '"NaN"',
        '"Infinity"',
        '"-Infinity"',
        '"1"',
        '"1.5"',
        '"true"',
        '"99999999999999999999"',
        '"18446744073709551615"',
        '"9223372036854775808"',
        '" 7"',
    ]
).map(str.encode)
_odd_characters = st.sampled_from(
    [
        "\u202e",
        "\u2066",
        "\u200b",
        "\ufeff",
        "\x85",
        "\x9b",
        "\u2028",
        "\u2029",
        "\ue000",
        "\x00",
        "\n",
        "\x1b[2J",
        "\x7f",
        "/",
        "..",
    ]
)
_odd_text = st.lists(_odd_characters | st.text(max_size=3), max_size=6).map("".join)
_escapes = st.sampled_from(
    [b'"\\ud800"', b'"\\udfff"', b'"a\\udc00b"', b'"\\ud83d\\ude00"', b'"\\u0000"', b'"\\u202e"']
)
_depths = st.sampled_from([2, 30, 62, 63, 64, 65, 66, 200, 253, 254, 255, 256, 1000, 1023])
_deep = st.builds(
    lambda depth, kind, inner: (
        _nested(depth, inner) if kind else b'{"a":' * depth + inner + b"}" * depth
    ),
    _depths,
    st.booleans(),
    st.sampled_from([b"", b"1", b'"x"', b"1e400"]),
)
_wrong_types = st.sampled_from([b"true", b"false", b"null", b"[]", b"{}", b"[1,2]", b'{"x":1}'])
_scalar_json = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(INT64_MIN, INT64_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    _odd_text,
).map(orjson.dumps)
_leaf: st.SearchStrategy[bytes] = st.one_of(
    _boundary_ints.map(lambda n: str(n).encode()),
    st.integers(-(2**70), 2**70).map(lambda n: str(n).encode()),
    _number_texts,
    _numeric_strings,
    _escapes,
    _deep,
    _wrong_types,
    _scalar_json,
)
# Field names of every record kind, so that objects built from scratch reach validation.
_names = (
    st.sampled_from(
        [
            "schema_version",
            "tenant",
            "session_key",
            "producer_id",
            "idempotency_key",
            "event",
            "author",
            "timestamp",
            "content",
            "parts",
            "text",
            "actions",
            "stateDelta",
            "id",
            "request_id",
            "event_offsets",
            "event_ids",
            "attempt",
            "seed",
            "last_offset",
            "token_usage",
            "reason",
            "original_value",
            "source_offset",
            "usageMetadata",
        ]
    )
    | _odd_text
)


def _object(members: list[tuple[str, bytes]]) -> bytes:
    return b"{" + b",".join(orjson.dumps(name) + b":" + value for name, value in members) + b"}"


_json = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: b"[" + b",".join(items) + b"]")
        | st.lists(st.tuples(_names, inner), max_size=6).map(_object)
    ),
    max_leaves=12,
)
# Objects at the root mostly (anything else is refused at once), duplicate keys allowed.
_from_scratch = st.lists(st.tuples(_names, _json), max_size=10).map(_object) | _json


def _valid_records() -> dict[str, BaseModel]:
    event = Event(
        id="e1",
        invocation_id="inv1",
        author="model",
        timestamp=1.5,
        content=Content(
            role="model",
            parts=[
                Part(text="hello"),
                Part(function_call=FunctionCall(id="c1", name="f", args={"q": [1, {"x": None}]})),
                Part(function_response=FunctionResponse(id="c1", name="f", response={"r": 2.5})),
            ],
        ),
        usage_metadata=UsageMetadata(prompt_token_count=120, total_token_count=127),
        actions=EventActions(
            state_delta={"k": {"n": 1}},
            artifact_delta={"a.txt": 2},
            compaction=EventCompaction(
                start_timestamp=0.5, end_timestamp=1.0, compacted_content=Content(parts=[])
            ),
        ),
        long_running_tool_ids=("c1",),
    )
    tenant = TenantId("acme")
    return {
        "envelope": Envelope(
            tenant=tenant, session_key=KEY, producer_id="p", idempotency_key="i", event=event
        ),
        "compaction_request": CompactionRequest(
            request_id="r1",
            tenant=tenant,
            session_key=KEY,
            trigger="token_threshold",
            event_offsets=(Offset(3), Offset(4)),
            event_ids=("e3", "e4"),
            start_timestamp=1.0,
            end_timestamp=2.0,
            seed=SummarySeed(
                timestamp=0.5, author="user", content=Content(parts=[Part(text="before")])
            ),
            decided_at_offset=Offset(5),
            attempt=2,
        ),
        "projection_snapshot": ProjectionSnapshot(
            tenant=tenant,
            session_key=KEY,
            last_offset=Offset(12),
            boundary=CompactionBoundary(
                summary_event_id="s",
                summary_offset=Offset(9),
                start_timestamp=1.0,
                end_timestamp=2.0,
                request_id="r1",
            ),
            invocations_total=3,
            invocations_since_compaction=1,
            token_usage=TokenUsage(last_prompt_tokens=5, total_prompt_tokens=9),
            context_items=4,
            context_fingerprint="ab",
            in_flight_request_id="r2",
        ),
        "dead_letter": build_dead_letter(
            reason="not JSON",
            stage="decode",
            source_topic="events",
            source_partition=1,
            source_offset=7,
            key=KEY.encode(),
            value=b"\x00\xff",
        ),
    }


VALID: Final = {kind: orjson.loads(encode(record)) for kind, record in _valid_records().items()}
# Fields left out of the mutations: none (the dead letter's counts are strict
# schemas.numbers.Count, checked by the test below).
LAX_FIELDS: Final[dict[str, frozenset[str]]] = {}
DEAD_LETTER_COUNTS: Final = ("original_size", "source_offset", "source_partition")


def _containers(value: Any) -> Iterator[dict[str, Any] | list[Any]]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            yield item
            stack.extend(item.values() if isinstance(item, dict) else item)


@st.composite
def _mutated(draw: st.DrawFn, kind: str) -> bytes:
    """A valid record of `kind` with one place changed to a hostile value, as raw JSON."""
    record = orjson.loads(orjson.dumps(VALID[kind]))  # a deep copy
    container = draw(st.sampled_from(list(_containers(record))))
    leaf = draw(_leaf)
    how = draw(st.sampled_from(["replace", "extra", "drop", "duplicate"]))
    if isinstance(container, list):
        if container and how != "extra":
            container[draw(st.integers(0, len(container) - 1))] = _MARK
        else:
            container.append(_MARK)
    elif how == "extra" or not container:
        container[draw(_odd_text | _names)] = _MARK
    else:
        lax = LAX_FIELDS.get(kind, frozenset()) if container is record else frozenset()
        name = draw(st.sampled_from(sorted(set(container) - lax)))
        if how == "drop":
            del container[name]
            return orjson.dumps(record)
        container[name] = _MARK
        if how == "duplicate":  # the same name again, orjson keeps the last
            raw = orjson.dumps(record).replace(_MARK_JSON, leaf, 1)
            return raw[:-1] + b"," + orjson.dumps(name) + b":" + draw(_leaf) + b"}"
    return orjson.dumps(record).replace(_MARK_JSON, leaf, 1)


def _decodes_or_says_why(kind: str, raw: bytes) -> None:
    decode = DECODERS[kind]
    try:
        record = decode(raw)
    except DecodeError as exc:
        _assert_safe(str(exc))
        return
    again = encode(record)
    assert decode(again) == record
    if isinstance(record, Envelope):
        assert decode_envelope_sized(raw)[0] == record
        _assert_contents_serialize(record.event)


def _assert_contents_serialize(event: Event) -> None:
    # What the projector serializes besides the record: context fingerprints
    # (stdlib json, sorted keys) and content sizes (orjson).
    contents = [event.content] if event.content is not None else []
    if event.actions.compaction is not None:
        contents.append(event.actions.compaction.compacted_content)
    for content in contents:
        as_json = content_to_json(content)
        json.dumps(as_json, sort_keys=True, ensure_ascii=False)
        orjson.dumps(as_json)


_PROPERTY: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("kind", sorted(DECODERS))
@_PROPERTY
@given(data=st.data())
def test_a_mutated_record_decodes_equal_again_or_is_refused(kind: str, data: st.DataObject) -> None:
    _decodes_or_says_why(kind, data.draw(_mutated(kind)))


@pytest.mark.parametrize("kind", sorted(DECODERS))
@_PROPERTY
@given(raw=_from_scratch)
def test_hostile_json_from_scratch_decodes_equal_again_or_is_refused(kind: str, raw: bytes) -> None:
    _decodes_or_says_why(kind, raw)


# The values that broke re-encoding or escaped the codec before (review H1,
# H2), and their neighbours at each bound.
_CRITICAL: Final = [
    b'"inf"',
    b'"-Infinity"',
    b'"NaN"',
    b'"99999999999999999999"',
    b"18446744073709551615",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"99999999999999999999",
    b"1e308",
    b"true",
    b"null",
    b"{}",
    b'"\\u202e\\n"',
    _nested(MAX_DEPTH - 1),
    _nested(255),
    _nested(300),
    _nested(1000),
]


def _places(
    record: Any, lax: frozenset[str]
) -> Iterator[tuple[dict[str, Any] | list[Any], str | int]]:
    """Every value's place (its container and key), and a new key in every object."""
    for container in _containers(record):
        if isinstance(container, dict):
            keys = set(container) - lax if container is record else set(container)
            yield from ((container, key) for key in sorted(keys))
            yield container, "x\n\u202eextra"
        else:
            yield from ((container, index) for index in range(len(container)))


@pytest.mark.parametrize("kind", sorted(DECODERS))
def test_every_place_of_every_record_survives_each_critical_value(kind: str) -> None:
    record = orjson.loads(orjson.dumps(VALID[kind]))  # a copy, changed in place and restored
    for container, key in list(_places(record, LAX_FIELDS.get(kind, frozenset()))):
        had = key in container if isinstance(container, dict) else True
        original = container[key] if had else None  # type: ignore[index]  # key matches container
        container[key] = _MARK  # type: ignore[index]  # key matches container
        template = orjson.dumps(record)
        for value in _CRITICAL:
            _decodes_or_says_why(kind, template.replace(_MARK_JSON, value, 1))
        if had:
            container[key] = original  # type: ignore[index]  # key matches container
        else:
            del container[key]  # type: ignore[arg-type]  # only objects get new keys


@pytest.mark.parametrize("field", DEAD_LETTER_COUNTS)
@pytest.mark.parametrize("value", ['"99999999999999999999"', "18446744073709551615", "-1", "true"])
def test_a_dead_letter_count_that_is_no_64_bit_count_is_refused(field: str, value: str) -> None:
    raw = orjson.dumps({**VALID["dead_letter"], field: "MARK"}).replace(b'"MARK"', value.encode())
    with pytest.raises(DecodeError):
        decode_dead_letter(raw)


def test_every_valid_record_used_for_mutation_decodes() -> None:
    for kind, record in _valid_records().items():
        assert DECODERS[kind](encode(record)) == record


# ---------------------------------------------------------------------------
# The retained-size estimate


@contextmanager
def _traced() -> Iterator[Callable[[], int]]:
    """Bytes allocated and still held since entering, as tracemalloc counts them."""
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    try:
        yield lambda: tracemalloc.get_traced_memory()[0] - before
    finally:
        if started:
            tracemalloc.stop()


def _envelope_of(event: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "schema_version": 2,
            "tenant": "acme",
            "session_key": KEY,
            "producer_id": "runner-1",
            "idempotency_key": f"{KEY}#{event.get('id', '')}",
            "event": event,
        }
    )


def _shapes() -> dict[str, bytes]:
    calls = [
        {"functionCall": {"id": f"c{n}", "name": "lookup", "args": {"q": f"order {n}", "n": n}}}
        for n in range(9_000)
    ]
    return {
        "text-0.9MB": _envelope_of(
            {"author": "user", "timestamp": 1.0, "content": {"parts": [{"text": "x" * 900_000}]}}
        ),
        "9000-calls": _envelope_of(
            {"author": "model", "timestamp": 2.0, "content": {"role": "model", "parts": calls}}
        ),
        "delta-40000-keys": _envelope_of(
            {
                "author": "agent",
                "timestamp": 3.0,
                "actions": {"stateDelta": {f"k{n}": f"v{n:05d}" for n in range(40_000)}},
            }
        ),
        "user-text": _envelope_of(
            {
                "id": "e1",
                "invocationId": "inv1",
                "author": "user",
                "timestamp": 1.5,
                "content": {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
            }
        ),
        "call-with-usage": _envelope_of(
            {
                "id": "e2",
                "invocationId": "inv1",
                "author": "model",
                "timestamp": 1.6,
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Paris"}}}
                    ],
                },
                "usageMetadata": {"promptTokenCount": 812, "totalTokenCount": 821},
            }
        ),
        "response": _envelope_of(
            {
                "id": "e3",
                "invocationId": "inv1",
                "author": "user",
                "timestamp": 1.7,
                "content": {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "c1",
                                "name": "weather",
                                "response": {"temperature": 21.5, "sky": "clear"},
                            }
                        }
                    ],
                },
            }
        ),
        "summary": _envelope_of(
            {
                "id": "e4",
                "invocationId": "cmp",
                "author": "user",
                "timestamp": 2.0,
                "actions": {
                    "compaction": {
                        "startTimestamp": 1.5,
                        "endTimestamp": 1.7,
                        "compactedContent": {"role": "model", "parts": [{"text": "Paris: sunny"}]},
                    }
                },
            }
        ),
    }


SHAPES: Final = _shapes()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_retained_size_estimate_is_within_a_factor_of_2(shape: str) -> None:
    raw = SHAPES[shape]
    assert len(raw) < MAX_RECORD_BYTES
    decode_envelope(SHAPES["user-text"])  # the session key's parse is cached once, not per record
    with _traced() as retained:
        envelope, estimate = decode_envelope_sized(raw)
        gc.collect()
        measured = retained()
    assert envelope.session_key == KEY
    assert measured / 2 <= estimate <= measured * 2, (shape, estimate, measured)
