"""Malformed `compaction-requests` records, generated from a seed, each with its dead letter.

Test support only, pure: a ``random.Random(seed)`` decides everything. The
summarizer must refuse every record :func:`bad_requests` makes before it reads the
log or calls a summarizer: at stage ``decode`` (the codec refuses it) or
``validate`` (it decodes, but no answer could name it: summarizer_worker's
``request_validity``), writing nothing into the session it names. Every class
below is refused by the codec already (``decode``): what ``validate`` checks, the
request model checks too, so it is the second line. The classes
are those of :mod:`tests.support.bad_records`, as a request can carry them:
broken pairing is offsets and ids that do not pair up, a mismatched tenant is one
that does not own the session, a forged record is another topic's record here.

Example: ``bad_requests(7, 50, partitions=2)`` -> 50 records, the same each run.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

import orjson

from schemas.codec import MAX_RECORD_BYTES
from schemas.kafka.partitioning import session_partition
from tests.support.bad_records import (
    FLAWS,
    BadRecord,
    bad_session,
    envelope_json,
    good_event,
)

Json = dict[str, Any]

#: Bytes a random-bytes record may start with: none opens a JSON value or is white space.
_NOT_JSON_START: Final = b"!#$%&'()*+,./:;<=>?@^_`|~\x00\x01\x7f\x80\xfe\xff"


def _request(rng: random.Random, key: str) -> Json:
    """A well-formed request of session `key` as JSON: the shape every bad one starts from."""
    count = rng.randrange(1, 4)
    return {
        "schema_version": 1,
        "request_id": f"{rng.getrandbits(128):032x}",
        "tenant": key.split("/", 1)[0],
        "session_key": key,
        "trigger": "sliding_window",
        "event_offsets": list(range(count)),
        "event_ids": [f"e{n}" for n in range(count)],
        "start_timestamp": 1_764_480_000.0,
        "end_timestamp": 1_764_480_010.0,
        "decided_at_offset": count,
    }


def _with(request: Json, **changes: Any) -> bytes:
    return orjson.dumps({**request, **changes})


Made = tuple[str, bytes | None, str, str]  # (variant, value, stage, phrase)


def _random_bytes(rng: random.Random, request: Json) -> Made:
    value = bytes([rng.choice(_NOT_JSON_START)]) + rng.randbytes(rng.randrange(0, 1_000))
    return "bytes", value, "decode", "not JSON"


def _truncated(rng: random.Random, request: Json) -> Made:
    whole = orjson.dumps(request)
    return "cut", whole[: rng.randrange(1, len(whole))], "decode", "not JSON"


def _deep(rng: random.Random, request: Json) -> Made:
    depth = rng.randrange(70, 1_000)
    nested = b"[" * depth + b"]" * depth
    value = _with(request, request_id="DEEP").replace(b'"DEEP"', nested)
    return "request-id", value, "decode", "nested deeper than"


_WRONG: Final[tuple[tuple[str, Json], ...]] = (
    ("offsets-string", {"event_offsets": "0,1"}),
    ("attempt-string", {"attempt": "1"}),
    ("attempt-zero", {"attempt": 0}),
    ("trigger-number", {"trigger": 5}),
    ("trigger-unknown", {"trigger": "whenever"}),
    ("ids-numbers", {"event_ids": [1]}),
    ("decided-bool", {"decided_at_offset": True}),
)


def _wrong_type(rng: random.Random, request: Json) -> Made:
    variant, changes = rng.choice(_WRONG)
    if variant == "ids-numbers":
        changes = {"event_offsets": [0], "event_ids": [1]}
    return variant, _with(request, **changes), "decode", "invalid compaction_request"


def _near_limit(rng: random.Random, request: Json) -> Made:
    if rng.random() < 0.5:
        long_id = "r" * rng.randrange(65, 300)
        return "id-over-64", _with(request, request_id=long_id), "decode", "request_id"
    padding = "p" * (MAX_RECORD_BYTES + rng.randrange(1, 4_096))
    return "record-over-limit", _with(request, padding=padding), "decode", "exceeds the limit"


def _invalid_utf8(rng: random.Random, request: Json) -> Made:
    text = rng.choice([b"\xff\xfe", b"\\udc00"])
    value = _with(request, event_ids=["UTF8"], event_offsets=[0]).replace(b"UTF8", text)
    return "value-bytes", value, "decode", "not JSON"


def _nan(rng: random.Random, request: Json) -> Made:
    field = rng.choice(["start_timestamp", "end_timestamp"])
    if rng.random() < 0.5:
        token = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999"])
        value = _with(request, **{field: "NAN"}).replace(b'"NAN"', token)
        return f"{field}-literal", value, "decode", "not JSON"
    text = rng.choice(["NaN", "inf", "-inf"])
    return f"{field}-string", _with(request, **{field: text}), "decode", "invalid"


def _schema_version(rng: random.Random, request: Json) -> Made:
    version = rng.choice([2, 5, 99, 0, -3, "1", 1.5, None])
    return repr(version), _with(request, schema_version=version), "decode", "schema_version"


def _mismatched(rng: random.Random, request: Json) -> Made:
    if rng.random() < 0.5:
        return "tenant-other", _with(request, tenant="evil"), "decode", "tenant"
    return "tombstone", None, "decode", "NoneType"


def _broken_pairing(rng: random.Random, request: Json) -> Made:
    variant = rng.choice(["more-ids", "negative-offset"])
    if variant == "more-ids":
        value = _with(request, event_offsets=[0], event_ids=["a", "b"])
        return variant, value, "decode", "invalid compaction_request"
    value = _with(request, event_offsets=[-1], event_ids=["x"])
    return variant, value, "decode", "negative event offset"


def _forged(rng: random.Random, request: Json) -> Made:
    key = request["session_key"]
    variant = rng.choice(["envelope", "snapshot", "dead-letter"])
    if variant == "envelope":
        value = orjson.dumps(envelope_json(key, good_event(rng, 0)))
    elif variant == "snapshot":
        value = orjson.dumps({"schema_version": 1, "session_key": key, "last_offset": 3})
    else:
        value = orjson.dumps(
            {
                "schema_version": 1,
                "reason": "r",
                "source_topic": "t",
                "source_partition": 0,
                "source_offset": 0,
                "original_value": "",
            }
        )
    return variant, value, "decode", "invalid compaction_request"


#: The maker of each class, in :data:`~tests.support.bad_records.FLAWS`' order.
_MAKERS: Final[dict[str, Callable[[random.Random, Json], Made]]] = dict(
    zip(
        FLAWS,
        (
            _random_bytes,
            _truncated,
            _deep,
            _wrong_type,
            _near_limit,
            _invalid_utf8,
            _nan,
            _schema_version,
            _mismatched,
            _broken_pairing,
            _forged,
        ),
        strict=True,
    )
)


def bad_requests(seed: int, count: int, *, partitions: int, sessions: int = 500) -> list[BadRecord]:
    """`count` malformed `compaction-requests` records from `seed`; every flaw once first.

    Each is keyed by the session it names (of :func:`~tests.support.bad_records.bad_session`)
    and written to that key's partition of `partitions`. Records over the size
    limit are drawn one time in ten of the other classes'. A record's ``value`` is
    empty bytes for a tombstone (written as None:
    :func:`~tests.support.bad_records.written_value`).
    """
    rng = random.Random(seed)  # noqa: S311 - draws test records, not secrets
    weights = [1 if flaw == "near-limit" else 10 for flaw in FLAWS]
    flaws = list(FLAWS)[:count]
    flaws += rng.choices(FLAWS, weights, k=count - len(flaws))
    records = []
    for flaw in flaws:
        key = bad_session(rng.randrange(sessions))
        variant, value, stage, phrase = _MAKERS[flaw](rng, _request(rng, key))
        raw_key = key.encode()
        partition = session_partition(raw_key, partitions)
        records.append(BadRecord(flaw, variant, raw_key, value or b"", partition, stage, phrase))
    return records
