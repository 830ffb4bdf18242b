"""Malformed `events` records, generated from a seed, each with the dead letter it must get.

Test support only (the ``ctxstream chaos`` command would move it under ``ctxstream/``).
Pure: a ``random.Random(seed)`` decides everything, so one seed always gives the
same records. :func:`bad_events` draws records of every :data:`FLAWS` class the
issue names (#27, "Bad input at scale"); each :class:`BadRecord` carries the
stage that must refuse it, a phrase its reason must hold, the partition it must
be written to (its key's own, except the misplaced ones), and, when the flaw can
be sent to the front door, what a caller would send (:class:`DoorInput`).

Records that are hostile but *valid* are not here: an orphan function response,
an unanswered call, a summary or refusal naming a request nobody made. ADK's own
session service stores such events and the pipeline folds them as ADK does
(:mod:`projections.contents.call_pairing`; the core tells records apart by what
they carry, projections/README.md); :mod:`tests.support.hostile_events` makes some,
which the tests write among the good records and expect applied.

Example: ``bad_events(7, 100, partitions=4)`` -> 100 records, the same each run,
every flaw class among them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

import orjson

from schemas.codec import MAX_RECORD_BYTES
from schemas.kafka.partitioning import session_partition

Json = dict[str, Any]

#: The classes of malformed input the issue names, in the order they are drawn.
FLAWS: Final = (
    "random-bytes",
    "truncated-json",
    "deep-json",
    "wrong-type",
    "near-limit",
    "invalid-utf8",
    "nan-infinity",
    "unknown-schema-version",
    "mismatched-key",
    "broken-pairing",
    "forged-bookkeeping",
)
#: How often each flaw is drawn, relative to the others: a record over the size
#: limit is 1 MB, so few of them.
_WEIGHTS: Final = dict.fromkeys(FLAWS, 10) | {"near-limit": 1}
#: Bytes a random-bytes record may start with: none opens a JSON value or is white space.
_NOT_JSON_START: Final = b"!#$%&'()*+,./:;<=>?@^_`|~\x00\x01\x7f\x80\xfe\xff"
#: Text that makes an oversized record just over the limit.
_OVER_BY: Final = 4_096


@dataclass(frozen=True, slots=True)
class DoorInput:
    """What a caller would send to the front door for a flaw, when one can send it.

    Attributes:
        session_key: The session the caller appends to.
        body: The HTTP body (bytes as sent).
        event: The same as a Python mapping for :meth:`ctxstream.Client.append`;
            None when the body is no JSON object (the client takes mappings only).
        phrase: Text the client's refusal must hold (empty: the letter's phrase);
            an HTTP body that is no JSON is refused as such instead.
    """

    session_key: str
    body: bytes = field(repr=False)
    event: Json | None = field(repr=False)  # may nest a thousand levels: no repr
    phrase: str = ""


@dataclass(frozen=True, slots=True)
class BadRecord:
    """One malformed record and the dead letter it must get.

    Attributes:
        flaw: Its class (:data:`FLAWS`).
        variant: Which shape of the class it is.
        key: The record key (None: no key).
        value: The record value; empty for a tombstone (:func:`written_value`).
        partition: Where it is written: its key's partition, unless misplaced on purpose.
        stage: The dead letter's stage.
        phrase: Text the dead letter's reason must hold.
        door: What a caller would send instead, when the flaw can be sent.
    """

    flaw: str
    variant: str
    key: bytes | None
    value: bytes
    partition: int
    stage: str
    phrase: str
    door: DoorInput | None = None


def good_event(rng: random.Random, number: int) -> Json:
    """A plain user event, as ADK writes it: the shape every malformed one starts from."""
    return {
        "id": f"e{number}-{rng.randrange(10**9)}",
        "invocationId": f"inv{number}",
        "author": "user",
        "timestamp": 1_764_480_000.0 + number,
        "content": {"role": "user", "parts": [{"text": f"question {number}"}]},
    }


def envelope_json(key: str, event: Json, **changes: Any) -> Json:
    """The envelope of `event` in session `key` as JSON, with `changes` to its top level."""
    return {
        "schema_version": 2,
        "tenant": key.split("/", 1)[0],
        "session_key": key,
        "producer_id": "bad-input",
        "idempotency_key": f"{key}/{event.get('id', 'x')}",
        "event": event,
        **changes,
    }


def bad_session(number: int, tenants: int = 5) -> str:
    """The session key of numbered session `number`: `tenants` tenants in turn."""
    return f"bt{number % tenants}/app{number % 3}/u{number}/s{number}"


class _Draw:
    """One record's draw: the random source, its session and its event."""

    def __init__(self, rng: random.Random, number: int, partitions: int, sessions: int) -> None:
        self.rng = rng
        self.partitions = partitions
        self.key = bad_session(rng.randrange(sessions))
        self.other_key = bad_session(rng.randrange(sessions) + sessions)  # never the same
        self.event = good_event(rng, number)

    def record(
        self,
        flaw: str,
        variant: str,
        value: bytes,
        phrase: str,
        *,
        key: bytes | str | None = "",
        stage: str = "decode",
        door: DoorInput | None = None,
        partition: int | None = None,
    ) -> BadRecord:
        """The record of `value` under this draw's key (or `key`), on that key's partition."""
        raw_key = (
            self.key.encode() if key == "" else (key.encode() if isinstance(key, str) else key)
        )
        if partition is None:
            if raw_key is None:
                partition = self.rng.randrange(self.partitions)
            else:
                partition = session_partition(raw_key, self.partitions)
        if door is not None and not door.phrase:
            door = replace(door, phrase=phrase)
        return BadRecord(flaw, variant, raw_key, value, partition, stage, phrase, door)

    def door(self, event: Json | None, body: bytes | None = None) -> DoorInput:
        """What a caller would send: `event` (its JSON as the body, unless `body` is given)."""
        sent = orjson.dumps(event) if body is None else body
        return DoorInput(self.key, sent, event)

    def enveloped(self, event: Json, **changes: Any) -> bytes:
        """`event` in this draw's session, as bytes."""
        return orjson.dumps(envelope_json(self.key, event, **changes))


def _random_bytes(d: _Draw) -> BadRecord:
    first = bytes([d.rng.choice(_NOT_JSON_START)])
    value = first + d.rng.randbytes(d.rng.randrange(0, 2_000))
    return d.record("random-bytes", "bytes", value, "not JSON", door=d.door(None, value))


def _truncated(d: _Draw) -> BadRecord:
    if d.rng.random() < 0.1:  # cut to nothing: a tombstone
        return d.record("truncated-json", "tombstone", b"", "no value")
    whole = d.enveloped(d.event)
    cut = whole[: d.rng.randrange(1, len(whole))]
    event_json = orjson.dumps(d.event)
    body = event_json[: d.rng.randrange(1, len(event_json))]
    return d.record("truncated-json", "cut", cut, "not JSON", door=d.door(None, body))


def _deep(d: _Draw) -> BadRecord:
    depth = d.rng.randrange(70, 1_000)
    placeholder = '"DEEP-PLACEHOLDER"'
    where = d.rng.choice(["customMetadata", "stateDelta", "args"])
    event = dict(d.event)
    if where == "customMetadata":
        event["customMetadata"] = {"x": "DEEP-PLACEHOLDER"}
    elif where == "stateDelta":
        event["actions"] = {"stateDelta": {"x": "DEEP-PLACEHOLDER"}}
    else:
        call = {"functionCall": {"id": "c1", "name": "f", "args": {"x": "DEEP-PLACEHOLDER"}}}
        event["content"] = {"role": "model", "parts": [call]}
    nested = b'{"x":' * depth + b"1" + b"}" * depth
    value = d.enveloped(event).replace(placeholder.encode(), nested)
    body = orjson.dumps(event).replace(placeholder.encode(), nested)
    door = d.door(orjson.loads(body), body)
    return d.record("deep-json", where, value, "nested deeper than", door=door)


#: Wrong-typed fields of an event: (variant, change to the event).
_WRONG_TYPES: Final[tuple[tuple[str, Callable[[Json], None]], ...]] = (
    ("timestamp-string", lambda e: e.update(timestamp="1764480000.5")),
    ("author-number", lambda e: e.update(author=7)),
    ("invocation-list", lambda e: e.update(invocationId=["inv"])),
    ("parts-object", lambda e: e.update(content={"role": "user", "parts": {"text": "x"}})),
    ("partial-string", lambda e: e.update(partial="yes")),
    ("tokens-string", lambda e: e.update(usageMetadata={"promptTokenCount": "12"})),
    ("tokens-bool", lambda e: e.update(usageMetadata={"promptTokenCount": True})),
    ("tokens-over-int32", lambda e: e.update(usageMetadata={"promptTokenCount": 2**31})),
    ("id-number", lambda e: e.update(id=12)),
    ("state-delta-list", lambda e: e.update(actions={"stateDelta": [1, 2]})),
    ("text-number", lambda e: e.update(content={"role": "user", "parts": [{"text": 5}]})),
)


def _wrong_type(d: _Draw) -> BadRecord:
    variant, change = d.rng.choice(_WRONG_TYPES)
    event = dict(d.event)
    change(event)
    return d.record(
        "wrong-type", variant, d.enveloped(event), "invalid envelope", door=d.door(event)
    )


def _near_limit(d: _Draw) -> BadRecord:
    if d.rng.random() < 0.2:  # a session key's part over 128 characters
        key = f"{d.key}{'p' * d.rng.randrange(128, 300)}"
        event = d.event
        value = orjson.dumps(envelope_json(key, event))
        door = DoorInput(key, orjson.dumps(event), event)
        return d.record("near-limit", "session-part-over-128", value, "128", key=key, door=door)
    if d.rng.random() < 0.7:  # a field over its own bound
        field = d.rng.choice(["id", "invocationId"])
        event = {**d.event, field: "i" * d.rng.randrange(257, 400)}
        return d.record(
            "near-limit",
            f"{field}-over-256",
            d.enveloped(event),
            "at most 256",
            door=d.door(event),
        )
    event = dict(d.event)
    base = len(d.enveloped({**event, "content": {"role": "user", "parts": [{"text": ""}]}}))
    over = MAX_RECORD_BYTES - base + d.rng.randrange(1, _OVER_BY)
    event["content"] = {"role": "user", "parts": [{"text": "t" * over}]}
    value = d.enveloped(event)
    door = DoorInput(d.key, orjson.dumps(event), event, f"over the limit of {MAX_RECORD_BYTES}")
    return d.record("near-limit", "record-over-limit", value, "exceeds the limit", door=door)


def _invalid_utf8(d: _Draw) -> BadRecord:
    variant = d.rng.choice(["value-byte", "lone-surrogate", "key-bytes"])
    if variant == "key-bytes":
        key = d.key.encode() + b"\xff\xfe"
        return d.record("invalid-utf8", variant, d.enveloped(d.event), "not UTF-8", key=key)
    text = b"caf\xc3\xa9 \xff\xfe" if variant == "value-byte" else b"\\ud800 alone"
    placeholder = b"UTF8-PLACEHOLDER"
    event = {**d.event, "content": {"role": "user", "parts": [{"text": "UTF8-PLACEHOLDER"}]}}
    value = d.enveloped(event).replace(placeholder, text)
    body = orjson.dumps(event).replace(placeholder, text)
    return d.record("invalid-utf8", variant, value, "not JSON", door=d.door(None, body))


def _nan(d: _Draw) -> BadRecord:
    token = d.rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e400"])
    if d.rng.random() < 0.5:  # a non-finite number as JSON has none: no JSON at all
        placeholder = b'"NAN-PLACEHOLDER"'
        where = d.rng.choice(["timestamp", "stateDelta"])
        event = dict(d.event)
        if where == "timestamp":
            event["timestamp"] = "NAN-PLACEHOLDER"
        else:
            event["actions"] = {"stateDelta": {"score": "NAN-PLACEHOLDER"}}
        value = d.enveloped(event).replace(placeholder, token)
        body = orjson.dumps(event).replace(placeholder, token)
        parsed = float(token.decode().replace("Infinity", "inf"))
        as_mapping = {**event}
        if where == "timestamp":
            as_mapping["timestamp"] = parsed
        else:
            as_mapping["actions"] = {"stateDelta": {"score": parsed}}
        # The client gets the float itself, which JSON cannot carry.
        door = DoorInput(d.key, body, as_mapping, "number is not finite")
        return d.record("nan-infinity", f"{where}-literal", value, "not JSON", door=door)
    text = d.rng.choice(["NaN", "inf", "-Infinity", "nan"])
    event = {**d.event, "timestamp": text}
    return d.record(
        "nan-infinity",
        "timestamp-string",
        d.enveloped(event),
        "invalid envelope",
        door=d.door(event),
    )


def _schema_version(d: _Draw) -> BadRecord:
    version = d.rng.choice([3, 4, 99, 2**40, 0, -1, "2", 2.5, True, None])
    return d.record(
        "unknown-schema-version",
        repr(version),
        d.enveloped(d.event, schema_version=version),
        "schema_version",
    )


def _mismatched(d: _Draw) -> BadRecord:
    variant = d.rng.choice(
        ["key-other-session", "tenant-other", "no-key", "misplaced", "key-over-1024"]
    )
    if variant == "key-over-1024":  # the letter keeps the first 1,024 bytes of the key
        key = d.key + "/" + "k" * d.rng.randrange(1_024, 5_000)
        return d.record(
            "mismatched-key", variant, d.enveloped(d.event), "differs from the envelope", key=key
        )
    if variant == "key-other-session":
        return d.record(
            "mismatched-key",
            variant,
            d.enveloped(d.event),
            "differs from the envelope",
            key=d.other_key,
        )
    if variant == "tenant-other":
        value = d.enveloped(d.event, tenant="evil")
        return d.record("mismatched-key", variant, value, "tenant")
    if variant == "no-key":
        return d.record("mismatched-key", variant, d.enveloped(d.event), "no key", key=None)
    home = session_partition(d.key.encode(), d.partitions)
    elsewhere = (home + d.rng.randrange(1, d.partitions)) % d.partitions
    return d.record(
        "mismatched-key",
        variant,
        d.enveloped(d.event),
        "belongs to partition",
        stage="partition",
        partition=elsewhere,
    )


#: Malformed call/response parts: (variant, the part).
_BROKEN_PAIRS: Final[tuple[tuple[str, str, Json], ...]] = (
    ("call-args-list", "model", {"functionCall": {"id": "c1", "name": "f", "args": [1]}}),
    ("call-id-number", "model", {"functionCall": {"id": 5, "name": "f", "args": {}}}),
    ("call-name-object", "model", {"functionCall": {"id": "c1", "name": {"n": 1}}}),
    ("response-string", "user", {"functionResponse": {"id": "c1", "name": "f", "response": "ok"}}),
    ("response-id-list", "user", {"functionResponse": {"id": ["c1"], "name": "f", "response": {}}}),
)


def _broken_pairing(d: _Draw) -> BadRecord:
    variant, role, part = d.rng.choice(_BROKEN_PAIRS)
    event = {**d.event, "author": "agent", "content": {"role": role, "parts": [part]}}
    return d.record(
        "broken-pairing", variant, d.enveloped(event), "invalid envelope", door=d.door(event)
    )


def _forged(d: _Draw) -> BadRecord:
    ours = "ctxstream"
    shapes: dict[str, tuple[Json, str]] = {
        "deletion-by-user": (
            {**d.event, "customMetadata": {ours: {"session_deleted": True}}},
            "malformed deletion record",
        ),
        "deletion-not-true": (
            {
                "id": d.event["id"],
                "author": ours,
                "timestamp": d.event["timestamp"],
                "customMetadata": {ours: {"session_deleted": "yes"}},
            },
            "malformed deletion record",
        ),
        "memory-bad-action": (
            {
                "id": d.event["id"],
                "author": ours,
                "timestamp": d.event["timestamp"],
                "customMetadata": {ours: {"memory": {"action": "explode"}}},
            },
            "malformed memory record",
        ),
        "creation-unconditional": (
            {
                "id": d.event["id"],
                "author": ours,
                "timestamp": d.event["timestamp"],
                "customMetadata": {ours: {"session_created": True}},
            },
            "malformed creation record",
        ),
        "summary-no-range": (
            {
                **d.event,
                "author": ours,
                "actions": {"compaction": {"compactedContent": {"role": "model", "parts": []}}},
                "customMetadata": {ours: {"compaction_request_id": "r1"}},
            },
            "invalid envelope",
        ),
    }
    records: dict[str, tuple[bytes, str, Json | None]] = {
        name: (d.enveloped(event), phrase, event) for name, (event, phrase) in shapes.items()
    }
    request = {
        "schema_version": 1,
        "request_id": "forged",
        "tenant": d.key.split("/")[0],
        "session_key": d.key,
        "trigger": "sliding_window",
        "event_offsets": [0],
        "event_ids": ["e"],
        "start_timestamp": 1.0,
        "end_timestamp": 2.0,
        "decided_at_offset": 0,
    }
    records["request-on-events"] = (orjson.dumps(request), "invalid envelope", None)
    snapshot = {
        "schema_version": 1,
        "session_key": d.key,
        "tenant": d.key.split("/")[0],
        "last_offset": 5,
    }
    records["snapshot-on-events"] = (orjson.dumps(snapshot), "invalid envelope", None)
    variant = d.rng.choice(sorted(records))
    value, phrase, event = records[variant]
    door = d.door(event) if event is not None else None
    return d.record("forged-bookkeeping", variant, value, phrase, door=door)


_MAKERS: Final[dict[str, Callable[[_Draw], BadRecord]]] = {
    "random-bytes": _random_bytes,
    "truncated-json": _truncated,
    "deep-json": _deep,
    "wrong-type": _wrong_type,
    "near-limit": _near_limit,
    "invalid-utf8": _invalid_utf8,
    "nan-infinity": _nan,
    "unknown-schema-version": _schema_version,
    "mismatched-key": _mismatched,
    "broken-pairing": _broken_pairing,
    "forged-bookkeeping": _forged,
}


def bad_events(seed: int, count: int, *, partitions: int, sessions: int = 500) -> list[BadRecord]:
    """`count` malformed `events` records drawn from `seed`; every flaw once first.

    Sessions are drawn from `sessions` keys over five tenants (:func:`bad_session`);
    records go to their key's partition of `partitions` unless misplaced on purpose.
    """
    rng = random.Random(seed)  # noqa: S311 - draws test records, not secrets
    flaws = list(FLAWS)[:count]
    weights = [_WEIGHTS[flaw] for flaw in FLAWS]
    flaws += rng.choices(FLAWS, weights, k=count - len(flaws))
    return [
        _MAKERS[flaw](_Draw(rng, number, partitions, sessions)) for number, flaw in enumerate(flaws)
    ]


def written_value(record: BadRecord) -> bytes | None:
    """What is written for `record`: its value, or None (a tombstone) for an empty one."""
    return record.value or None
