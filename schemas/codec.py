"""The one place bytes become records and records become bytes (orjson).

It is the error boundary: whatever goes wrong between bytes and a valid
record (not JSON, not an object, an unknown schema version, a failed
validation, a record too large, a key that does not match) leaves as a
:class:`DecodeError` whose message says what was wrong.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.projection_snapshot import ProjectionSnapshot
from schemas.upcasters import RecordKind, upcast

# Kafka's default max.message.bytes is 1 MiB plus a little; a record beyond it
# could not have been produced, and one this large is a producer bug.
MAX_RECORD_BYTES: Final = 1_000_000
_MAX_SHOWN_ERRORS: Final = 5
_MAX_SHOWN_INPUT: Final = 60

_ENVELOPE: Final = TypeAdapter(Envelope)
_COMPACTION_REQUEST: Final = TypeAdapter(CompactionRequest)
_PROJECTION_SNAPSHOT: Final = TypeAdapter(ProjectionSnapshot)
_DEAD_LETTER: Final = TypeAdapter(DeadLetter)

RecordT = TypeVar("RecordT", bound=BaseModel)


def encode(record: BaseModel) -> bytes:
    """The record's bytes on its topic: compact JSON, ``None`` fields left out."""
    return orjson.dumps(record.model_dump(mode="json", by_alias=True, exclude_none=True))


def decode_envelope(raw: bytes, *, record_key: bytes | None = None) -> Envelope:
    """Parse, upcast and validate one `events` record value.

    Args:
        raw: the record value.
        record_key: the record key, when known: it must equal the envelope's
            session key, or the event would be folded into another session.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    envelope = _decode(raw, "envelope", _ENVELOPE)
    if record_key is not None:
        try:
            key = record_key.decode()
        except UnicodeDecodeError as exc:
            raise DecodeError("record key is not UTF-8") from exc
        if key != envelope.session_key:
            raise DecodeError(
                f"record key {key!r} differs from the envelope's session_key "
                f"{envelope.session_key!r}"
            )
    return envelope


def decode_compaction_request(raw: bytes) -> CompactionRequest:
    """Parse one `compaction-requests` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "compaction_request", _COMPACTION_REQUEST)


def decode_projection_snapshot(raw: bytes) -> ProjectionSnapshot:
    """Parse one `projections` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "projection_snapshot", _PROJECTION_SNAPSHOT)


def decode_dead_letter(raw: bytes) -> DeadLetter:
    """Parse one `dead-letters` record value.

    Raises:
        DecodeError: the reason the record is unusable.
    """
    return _decode(raw, "dead_letter", _DEAD_LETTER)


def _decode(raw: bytes, kind: RecordKind, adapter: TypeAdapter[RecordT]) -> RecordT:
    if len(raw) > MAX_RECORD_BYTES:
        raise DecodeError(f"record of {len(raw)} bytes exceeds the limit of {MAX_RECORD_BYTES}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise DecodeError(f"expected a JSON object, got {_json_type(data)}")
    try:
        return adapter.validate_python(upcast(kind, data))
    except ValidationError as exc:
        raise DecodeError(f"invalid {kind}: {_describe(exc)}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError(f"invalid {kind}: {exc}") from exc


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    shown = [
        f"{'.'.join(str(part) for part in error['loc']) or '<record>'}: {error['msg']}"
        f"{_shown_input(error)}"
        for error in errors[:_MAX_SHOWN_ERRORS]
    ]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more else "")


def _shown_input(error: Any) -> str:
    if error["type"] == "missing":
        return ""
    text = repr(error.get("input"))
    if len(text) > _MAX_SHOWN_INPUT:
        text = text[: _MAX_SHOWN_INPUT - 3] + "..."
    return f" (got {text})"


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
