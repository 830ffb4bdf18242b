"""The codec's one pass against the long way: the same envelope and count, or it declines.

The oracle is the long way (the bounds walk over the parsed record, then the
upcasters and validation), written separately and what every record was
decoded with before the pass. Whatever the pass accepts, the long way accepts
as an equal envelope (the same fields given and extras, so the same bytes
when encoded again) with the same number of JSON values; what the pass
declines, the long way decides, so every reason stays the long way's. The
pass must also be taken: by the golden records, ADK's own dump and free-form
values within the bounds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, TypeAdapter

from schemas.codec import _envelope_in_one_pass, _parsed, _validated, decode_envelope
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import AdkModel, Content
from schemas.free_form_places import free_form_levels
from schemas.json_bounds import INT64_MAX, INT64_MIN, MAX_DEPTH
from schemas.one_pass import BoundedJson, PassTally
from tests.unit.schemas.test_codec_hostile import _PROPERTY, _from_scratch, _json, _mutated
from tests.unit.schemas.test_wire_golden import GOLDEN

FULL_DUMP: Final = Path(__file__).parents[2] / "fixtures" / "adk-event-full-dump.json"
_LONG_WAY: Final = TypeAdapter(Envelope)


def _takes_the_pass(raw: bytes) -> bool:
    """Whether the pass took `raw`; when it did, it agrees with the long way."""
    try:
        passed = _envelope_in_one_pass(_parsed(raw))
    except DecodeError:  # not a JSON object: refused before any validation
        return False
    if passed is None:
        return False
    envelope, values = passed
    expected, expected_values = _validated(orjson.loads(raw), "envelope", _LONG_WAY)
    assert envelope == expected
    assert orjson.dumps(envelope.model_dump(mode="json", by_alias=True, exclude_unset=True)) == (
        orjson.dumps(expected.model_dump(mode="json", by_alias=True, exclude_unset=True))
    )
    assert values == expected_values
    return True


def _record(event: bytes) -> bytes:
    return (
        b'{"schema_version":2,"tenant":"acme","session_key":"acme/app/u/s",'
        b'"producer_id":"p","idempotency_key":"i","event":' + event + b"}"
    )


# Places a free-form value can take in an event, from shallow to the deepest.
_PLACES: Final = [
    b'{"author":"u","timestamp":1,"customMetadata":{"k":MARK}}',
    b'{"author":"u","timestamp":1,"actions":{"stateDelta":{"k":MARK}}}',
    b'{"author":"u","timestamp":1,"modelVersion":MARK}',
    b'{"author":"model","timestamp":1,"content":{"parts":[{"functionCall":'
    b'{"id":"c","name":"f","args":{"q":MARK}}}]}}',
    b'{"author":"u","timestamp":2,"actions":{"compaction":{"startTimestamp":1,'
    b'"endTimestamp":2,"compactedContent":{"parts":[{"functionResponse":'
    b'{"id":"c","name":"f","response":{"r":MARK},"scheduling":MARK}}]}}}}',
]


def _placed(place: bytes, value: bytes) -> bytes:
    return _record(place.replace(b"MARK", value))


# ---------------------------------------------------------------------------
# Records the pass takes


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("envelope-v2-*.json")), ids=lambda p: p.stem)
def test_every_golden_envelope_takes_the_pass(path: Path) -> None:
    assert _takes_the_pass(path.read_bytes().rstrip(b"\n"))


def test_adks_own_dump_of_every_field_takes_the_pass() -> None:
    event = json.loads(FULL_DUMP.read_text())["by_alias"]
    assert _takes_the_pass(_record(orjson.dumps(event)))


# Left to the long way, wherever they are: floats of 1e100 and more (an exponent of
# 3 digits), and NaN, Infinity or a digit followed by an exponent in a text.
_text = st.text(max_size=8).filter(
    lambda text: not any(map(str.isdigit, text)) and "NaN" not in text and "Infinity" not in text
)
_bounded_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(INT64_MIN, INT64_MAX)
    | st.floats(min_value=-1e99, max_value=1e99)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=30,
)


@_PROPERTY
@given(place=st.sampled_from(_PLACES), value=_bounded_json)
def test_free_form_values_within_the_bounds_take_the_pass(place: bytes, value: Any) -> None:
    assert _takes_the_pass(_placed(place, orjson.dumps(value)))


# ---------------------------------------------------------------------------
# Whatever the pass takes, the long way reads alike


@_PROPERTY
@given(place=st.sampled_from(_PLACES), value=_json)
def test_a_hostile_free_form_value_is_read_alike_or_left_to_the_long_way(
    place: bytes, value: bytes
) -> None:
    _takes_the_pass(_placed(place, value))


@_PROPERTY
@given(raw=_mutated("envelope"))
def test_a_mutated_envelope_is_read_alike_or_left_to_the_long_way(raw: bytes) -> None:
    _takes_the_pass(raw)


@_PROPERTY
@given(raw=_from_scratch)
def test_hostile_json_is_read_alike_or_left_to_the_long_way(raw: bytes) -> None:
    _takes_the_pass(raw)


@_PROPERTY
@given(
    timestamp=st.floats(allow_nan=False, allow_infinity=False).map(repr)
    | st.integers(-(2**70), 2**70).map(str)
    | st.from_regex(r"-?[1-9][0-9]{0,25}(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)
)
def test_a_number_is_read_as_the_long_way_reads_it(timestamp: str) -> None:
    _takes_the_pass(_record(b'{"author":"u","timestamp":' + timestamp.encode() + b"}"))


# ---------------------------------------------------------------------------
# Records the pass leaves to the long way, and the reasons it gives


def test_a_field_named_beside_its_alias_is_kept_as_an_extra_field() -> None:
    raw = _record(b'{"author":"u","timestamp":1,"invocationId":"i1","invocation_id":"i2"}')
    assert _takes_the_pass(raw)
    event = decode_envelope(raw).event
    assert event.invocation_id == "i1"
    assert event.model_extra == {"invocation_id": "i2"}


def test_a_version_1_record_is_lifted_the_long_way() -> None:
    raw = b'{"session_key":"acme/app/u/s","producer_id":"p","idempotency_key":"i",'
    raw += b'"event":{"author":"u","timestamp":1}}'
    assert _envelope_in_one_pass(orjson.loads(raw)) is None
    assert decode_envelope(raw).tenant == "acme"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (
            _record(b'{"author":"u","timestamp":1}').replace(b":2,", b":2.0,", 1),
            "invalid envelope: UnknownSchemaVersionError: "
            "schema_version must be an integer, got 2.0",
        ),
        (
            _record(b'{"author":"u","timestamp":9223372036854775808}'),
            "event.timestamp: integer outside the signed 64-bit range",
        ),
        (
            _placed(_PLACES[0], b"[" * 62 + b"]" * 62),
            "event.customMetadata.k.0....(64 levels)....0.0: nested deeper than 64 levels",
        ),
        (
            _placed(_PLACES[2], b"18446744073709551615"),
            "event.modelVersion: integer outside the signed 64-bit range",
        ),
        (
            _placed(_PLACES[1], b"[" + b"0," * 62_500 + b"0]"),
            "event.actions.stateDelta.k: 62501 items in one container, at most 62500",
        ),
        (
            _record(
                b'{"author":"u","timestamp":1,"content":{"parts":[' + b"{}," * 62_500 + b"{}]}}"
            ),
            "event.content.parts: 62501 items in one container, at most 62500",
        ),
    ],
    ids=["version-2.0", "timestamp-2^63", "depth-65", "extra-u64", "items", "parts"],
)
def test_the_long_way_says_why_the_record_is_refused(raw: bytes, reason: str) -> None:
    assert _envelope_in_one_pass(orjson.loads(raw)) is None
    with pytest.raises(DecodeError) as caught:
        decode_envelope(raw)
    assert str(caught.value) == reason


def test_a_value_deeper_than_its_deepest_place_allows_is_left_to_the_long_way() -> None:
    # customMetadata is level 3: its value may nest 61 levels, where the pass
    # allows every free-form value 56 (those of level 9 may nest that far).
    deep = b'{"a":' * 60 + b"{}" + b"}" * 60
    data = orjson.loads(_placed(_PLACES[0], deep))
    assert _envelope_in_one_pass(data) is None
    # the record, its 6 members, the event's 3, customMetadata's 1 and 1 in each of the 60
    assert _validated(data, "envelope", _LONG_WAY)[1] == 1 + 6 + 3 + 1 + 60
    shallower = _placed(_PLACES[0], b'{"a":' * 54 + b"{}" + b"}" * 54)
    assert _takes_the_pass(shallower)


def test_an_exception_inside_the_pass_leaves_the_record_to_the_long_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(tenant: str, session_key: str) -> None:
        raise RecursionError("too deep")

    monkeypatch.setattr("schemas.envelope.check_tenant_owns_session", broken)
    with pytest.raises(DecodeError) as caught:
        decode_envelope(_record(b'{"author":"u","timestamp":1}'))
    assert str(caught.value) == "invalid envelope: RecursionError: too deep"


# ---------------------------------------------------------------------------
# The walk, the count, the places


def test_a_free_form_value_is_counted_as_the_bounds_walk_counts() -> None:
    tally = PassTally(free_form_levels=3)
    value = {"turn": 1, "notes": ["a", {"b": 2.5}]}
    assert TypeAdapter(BoundedJson).validate_python(value, context=tally) == value
    assert tally.nodes == 1 + 5


@pytest.mark.parametrize(
    "value",
    [[[[[]]]], [INT64_MAX + 1], {"a": INT64_MIN - 1}, [float("inf")], [float("nan")], [b"x"]],
    ids=["four-levels", "int64+1", "int64-1", "inf", "nan", "bytes"],
)
def test_a_free_form_value_beyond_the_bounds_is_refused_in_a_pass(value: object) -> None:
    adapter = TypeAdapter(BoundedJson)
    with pytest.raises(ValueError, match="beyond the bounds of one pass"):
        adapter.validate_python(value, context=PassTally(free_form_levels=3))
    assert adapter.validate_python(value) == value  # outside a pass, as given


def test_a_model_counts_its_members_and_its_parts() -> None:
    tally = PassTally(free_form_levels=56)
    content = {"role": "user", "parts": [{"text": "a"}, {"text": "b", "x": 1}]}
    Content.model_validate(content, context=tally)
    # the content's 2 members, the array's 2 items, 1 + 2 members in the parts
    assert tally.nodes == 1 + 2 + 2 + 3


def test_free_form_values_of_an_envelope_may_span_56_levels() -> None:
    assert free_form_levels(Envelope) == MAX_DEPTH - 9 + 1


class _Unwalked(BaseModel):
    value: Any


class _UncheckedExtras(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Inside(AdkModel):
    inner: _Inside | None = None


@pytest.mark.parametrize(
    ("root", "problem"),
    [
        (_Unwalked, "the pass does not walk a value of typing.Any"),
        (_UncheckedExtras, "_UncheckedExtras keeps extras the pass does not walk"),
        (_Inside, "_Inside holds itself"),
    ],
    ids=["any", "extras", "itself"],
)
def test_a_type_with_a_place_the_pass_cannot_walk_is_refused(
    root: type[BaseModel], problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        free_form_levels(root)
