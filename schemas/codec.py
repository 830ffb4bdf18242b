"""The one place bytes become records and records become bytes (orjson, pydantic-core).

It is the error boundary: whatever goes wrong between bytes and a valid
record (not JSON, not an object, beyond a bound of :mod:`schemas.json_bounds`,
an unknown schema version, a failed validation, a record too large, a key
that does not match, or any other exception on the way) leaves as a
:class:`DecodeError` whose message says what was wrong in one bounded,
escaped line. Whatever decodes can be encoded again.

Every record is parsed (orjson) and lifted (:mod:`schemas.upcasters`). An
`events` record at the current version is then validated in one pass, its
bounds checked and its values counted on the way (:mod:`schemas.one_pass`);
one that pass refuses, and every other record, is decoded the long way: its
parsed value walked for its bounds (:func:`check_json_bounds`), then
validated, which says why it is refused or accepts it. Either way an envelope
and its count are the same (``schemas/README.md``, "One pass").
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.free_form_places import free_form_levels
from schemas.json_bounds import MAX_NODES, MAX_RECORD_BYTES, check_json_bounds, shown_path
from schemas.log_text import shown
from schemas.one_pass import PassTally
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.upcasters import RecordKind, upcast

__all__ = [
    "MAX_RECORD_BYTES",
    "RETAINED_BYTES_PER_NODE",
    "RETAINED_BYTES_PER_RECORD",
    "decode_compaction_request",
    "decode_dead_letter",
    "decode_envelope",
    "decode_envelope_sized",
    "decode_projection_snapshot",
    "encode",
]

# The retained-size estimate, calibrated with tracemalloc against
# decode_envelope (tests/unit/test_codec_hostile.py measures the shapes and
# holds the estimate to a factor of 2 of them). Measured on CPython 3.11,
# pydantic 2.13: a small event retained ~6.6-7.6 KB beyond its bytes
# (~4.6 KB of it the models every envelope had: Envelope, Event, NodeInfo,
# EventActions and its four dicts) plus ~120 bytes per value; since events
# without actions or a node info share one of each, ~1.2 KB less (a short
# user text: 4.8 KB, estimated 7.5), left as a margin. 9,000
# function-call parts (63,000 values) retain ~240 bytes per value, a state
# delta of 40,000 keys ~116. Records of bare empty parts cost ~830 bytes
# per value and are underestimated ~5x; the caps bound the worst one: 125,000
# empty parts in 375 KB retain ~104 MB, estimated at ~21.6 MB.
#: Bytes every decoded envelope retains whatever it carries.
RETAINED_BYTES_PER_RECORD: Final = 4_500
#: Bytes a decoded envelope retains per JSON value, on top of the record's
#: length: the model instances, dicts and strings a value becomes.
RETAINED_BYTES_PER_NODE: Final = 170
_MAX_SHOWN_ERRORS: Final = 5
_MAX_SHOWN_INPUT: Final = 60
_MAX_SHOWN_MESSAGE: Final = 200
_MAX_SHOWN_KEYS: Final = 3
_MAX_SHOWN_KEY: Final = 20

_ENVELOPE: Final = TypeAdapter(Envelope)
_COMPACTION_REQUEST: Final = TypeAdapter(CompactionRequest)
_PROJECTION_SNAPSHOT: Final = TypeAdapter(ProjectionSnapshot)
_DEAD_LETTER: Final = TypeAdapter(DeadLetter)
# The one pass: the model's own pydantic-core validator, built with the model.
_ENVELOPE_PASS: Final = Envelope.__pydantic_validator__
_ENVELOPE_FREE_FORM_LEVELS: Final = free_form_levels(Envelope)

RecordT = TypeVar("RecordT", bound=BaseModel)


def encode(record: BaseModel) -> bytes:
    """The record's bytes on its topic: compact JSON, ``None`` fields left out.

    Written by the model's own pydantic-core serializer, straight to bytes: the
    same bytes as ``orjson.dumps`` of its JSON dump, without building the dump.
    """
    return record.__pydantic_serializer__.to_json(record, by_alias=True, exclude_none=True)


def decode_envelope(raw: bytes, *, record_key: bytes | None = None) -> Envelope:
    """Parse, upcast and validate one `events` record value.

    Args:
        raw: the record value.
        record_key: the record key, when known: it must equal the envelope's
            session key, or the event would be folded into another session.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return decode_envelope_sized(raw, record_key=record_key)[0]


def decode_envelope_sized(raw: bytes, *, record_key: bytes | None = None) -> tuple[Envelope, int]:
    """Decode like :func:`decode_envelope`, with an estimate of the bytes the envelope retains.

    The estimate is computed from the record alone: its length, plus
    :data:`RETAINED_BYTES_PER_RECORD`, plus :data:`RETAINED_BYTES_PER_NODE`
    per JSON value in it. It is what a byte-accounted cache charges for
    keeping the envelope.

    Example: a 0.9 MB text event -> ~0.9 MB; 9,000 function-call parts in
    0.74 MB (~63,000 values) -> ~11.5 MB, where tracemalloc measures ~15.8 MB.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    data = _parsed(raw)
    passed = _envelope_in_one_pass(data)
    envelope, nodes = passed if passed is not None else _validated(data, "envelope", _ENVELOPE)
    if record_key is not None:
        _check_record_key(record_key, envelope)
    return envelope, _retained_bytes(len(raw), nodes)


def _envelope_in_one_pass(data: dict[str, Any]) -> tuple[Envelope, int] | None:
    """The envelope `data` holds and its JSON values, from one pass; None: the long way decides.

    A record of an older version goes the long way too, which counts its values
    as read, before they are lifted.
    """
    tally = PassTally(_ENVELOPE_FREE_FORM_LEVELS)
    try:
        if upcast("envelope", data) is not data:
            return None
        envelope: Envelope = _ENVELOPE_PASS.validate_python(data, context=tally)
    except Exception:  # noqa: BLE001 - whatever the pass refuses, the long way says why
        return None
    return (envelope, tally.nodes) if tally.nodes <= MAX_NODES else None


def _retained_bytes(record_bytes: int, nodes: int) -> int:
    """The bytes a decoded envelope of `record_bytes` holding `nodes` JSON values retains.

    Example: a 300-byte event of 16 values -> 300 + 4,500 + 16 * 170 = 7,520
    (tracemalloc: ~6,900).
    """
    return record_bytes + RETAINED_BYTES_PER_RECORD + nodes * RETAINED_BYTES_PER_NODE


def _check_record_key(record_key: bytes, envelope: Envelope) -> None:
    try:
        key = record_key.decode()
    except UnicodeDecodeError as exc:
        raise DecodeError("record key is not UTF-8") from exc
    if key != envelope.session_key:
        raise DecodeError(
            f"record key {_quoted(key)} differs from the envelope's session_key "
            f"{_quoted(envelope.session_key)}"
        )


def decode_compaction_request(raw: bytes) -> CompactionRequest:
    """Parse one `compaction-requests` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "compaction_request", _COMPACTION_REQUEST)[0]


def decode_projection_snapshot(raw: bytes) -> ProjectionSnapshot:
    """Parse one `projections` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "projection_snapshot", _PROJECTION_SNAPSHOT)[0]


def decode_dead_letter(raw: bytes) -> DeadLetter:
    """Parse one `dead-letters` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "dead_letter", _DEAD_LETTER)[0]


def _decode(raw: bytes, kind: RecordKind, adapter: TypeAdapter[RecordT]) -> tuple[RecordT, int]:
    """The record and the number of JSON values in it, the long way."""
    return _validated(_parsed(raw), kind, adapter)


def _parsed(raw: bytes) -> dict[str, Any]:
    """The JSON object of a record.

    Raises:
        DecodeError: too large, not JSON, or not an object.
    """
    if len(raw) > MAX_RECORD_BYTES:
        raise DecodeError(f"record of {len(raw)} bytes exceeds the limit of {MAX_RECORD_BYTES}")
    # Each step turns any exception into a DecodeError: one hostile record
    # must never stop a worker, whatever library code it reaches.
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {shown(str(exc), _MAX_SHOWN_MESSAGE)}") from exc
    except Exception as exc:  # whatever else the parser raises: not JSON either
        raise DecodeError(f"not JSON: {_message(exc)}") from exc
    if not isinstance(data, dict):
        raise DecodeError(f"expected a JSON object, got {_json_type(data)}")
    return data


def _validated(
    data: dict[str, Any], kind: RecordKind, adapter: TypeAdapter[RecordT]
) -> tuple[RecordT, int]:
    """The record `data` holds and its JSON values, the long way: walked, lifted, validated.

    Raises:
        DecodeError: beyond a bound, or not a valid record of `kind`.
    """
    try:
        nodes = check_json_bounds(data)
    except DecodeError:
        raise
    except Exception as exc:  # the walk's own failure is this record's too
        raise DecodeError(f"unreadable {kind}: {_message(exc)}") from exc
    try:
        return adapter.validate_python(upcast(kind, data)), nodes
    except ValidationError as exc:
        raise DecodeError(f"invalid {kind}: {_describe(exc)}") from exc
    except Exception as exc:  # upcasters and validators may raise anything
        raise DecodeError(f"invalid {kind}: {_message(exc)}") from exc


def _describe(exc: ValidationError) -> str:
    """The first errors, each located and escaped; never raises."""
    try:
        errors = exc.errors(include_url=False)
        shown_errors = [_shown_error(error) for error in errors[:_MAX_SHOWN_ERRORS]]
        more = len(errors) - len(shown_errors)
        return "; ".join(shown_errors) + (f"; and {more} more" if more else "")
    except Exception:  # noqa: BLE001 - a reason must come out whatever the error holds
        return "validation failed"


def _shown_error(error: ErrorDetails) -> str:
    where = shown_path(error["loc"])
    message = shown(error["msg"], _MAX_SHOWN_MESSAGE)
    if error["type"] == "missing":
        return f"{where}: {message}"
    return f"{where}: {message} (got {_shown_input(error['input'])})"


def _shown_input(value: object) -> str:
    """The offending input in a few characters, without rendering any nested value.

    Example: ``7`` -> ``7``; ``"late"`` -> ``'late'``; ``[[1], 2]`` ->
    ``an array of 2 items``.
    """
    match value:
        case str():
            return _quoted(value)
        case Mapping():
            first = itertools.islice(value, _MAX_SHOWN_KEYS)
            keys = ", ".join(_quoted(str(key), _MAX_SHOWN_KEY) for key in first)
            more = ", ..." if len(value) > _MAX_SHOWN_KEYS else ""
            return f"an object with keys {keys}{more}" if keys else "an empty object"
        case list() | tuple():
            return f"an array of {len(value)} items"
        case _:
            return shown(value, _MAX_SHOWN_INPUT)


def _quoted(text: str, limit: int = _MAX_SHOWN_INPUT) -> str:
    # repr of a str never recurses; it is cut first so a huge text is not copied.
    return shown(repr(text[: limit + 1]), limit + 2)


def _message(exc: BaseException) -> str:
    """``Type: message`` of an exception, bounded; never raises."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ still leaves its type
        text = ""
    name = type(exc).__name__
    return shown(f"{name}: {text}" if text else name, _MAX_SHOWN_MESSAGE)


def _json_type(value: object) -> str:
    match value:
        case list():
            return "an array"
        case str():
            return "a string"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case None:
            return "null"
        case _:
            return type(value).__name__
