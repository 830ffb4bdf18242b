"""Records as rows: the columns, NUL replaced and flagged lossy, dead letters for the rest."""

from __future__ import annotations

import orjson
import pytest

from schemas.codec import encode
from schemas.dead_letter import DeadLetter
from schemas.keys import SessionKey
from streams.batch import BatchProjector
from streams.batch.cache import SessionCache
from streams.batch.records import SourceRecord
from streams.projector_settings import ProjectorSettings
from streams.sink.errors import FenceError
from streams.sink.fence import Batch
from streams.sink.rows import NUL_REPLACEMENT, EventRow, batch_rows, event_row
from tests.support.events import envelope, text_event

KEY = SessionKey("acme/support/u1/s1")
#: The partition count under which KEY belongs to partition 3, where `record` puts it.
PARTITIONS = 12


def record(value: bytes, key: bytes | None = KEY.encode(), offset: int = 7) -> SourceRecord:
    return SourceRecord("p.events", 3, offset, key, value)


def test_a_plain_event_is_a_row_with_its_columns_and_no_raw_bytes() -> None:
    env = envelope(KEY, text_event("e1", "inv1", 12.5, "hello"))
    row = event_row(record(encode(env)))

    assert isinstance(row, EventRow)
    assert (row.partition, row.offset, row.session_key) == (3, 7, KEY)
    assert (row.tenant, row.app, row.user_id, row.session_id) == ("acme", "support", "u1", "s1")
    assert (row.event_id, row.invocation_id, row.event_timestamp) == ("e1", "inv1", 12.5)
    assert orjson.loads(row.event) == orjson.loads(encode(env))["event"]
    assert (row.raw, row.lossy) == (None, False)


def test_nul_is_replaced_everywhere_and_the_original_bytes_are_kept() -> None:
    event = {
        "id": "e\x001",
        "invocationId": "inv1",
        "author": "us\x00er",
        "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"text": "a\x00b"}]},
        "actions": {"stateDelta": {"k\x00": ["\x00"]}},
    }
    value = encode(envelope(KEY, event))
    row = event_row(record(value))

    assert isinstance(row, EventRow)
    assert row.lossy
    assert row.raw == value
    assert "\x00" not in row.event
    assert (row.event_id, row.author) == (f"e{NUL_REPLACEMENT}1", f"us{NUL_REPLACEMENT}er")
    stored = orjson.loads(row.event)
    assert stored["content"]["parts"][0]["text"] == f"a{NUL_REPLACEMENT}b"
    assert stored["actions"]["stateDelta"] == {f"k{NUL_REPLACEMENT}": [NUL_REPLACEMENT]}


def test_an_escaped_backslash_before_u0000_is_not_a_nul() -> None:
    value = encode(envelope(KEY, text_event("e1", "inv1", 1.0, "\\u0000 is how JSON writes it")))
    row = event_row(record(value))

    assert isinstance(row, EventRow)
    assert (row.lossy, row.raw) == (False, None)
    assert orjson.loads(row.event)["content"]["parts"][0]["text"].startswith("\\u0000")


@pytest.mark.parametrize(
    ("value", "key", "reason"),
    [
        (b"not json", KEY.encode(), "JSON"),
        (b"{}", KEY.encode(), ""),
        (b"{}", None, "record has no key"),
    ],
)
def test_what_cannot_be_stored_becomes_a_dead_letter_with_its_offset(
    value: bytes, key: bytes | None, reason: str
) -> None:
    letter = event_row(record(value, key, offset=41))

    assert isinstance(letter, DeadLetter)
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (
        "p.events",
        3,
        41,
    )
    assert letter.original_value == value
    assert reason in letter.reason


def test_a_key_the_key_rules_refuse_is_a_dead_letter() -> None:
    good = orjson.loads(encode(envelope(KEY, text_event("e1", "inv1", 1.0, "x"))))
    bad_key = "acme/support/u1/../"
    value = orjson.dumps({**good, "session_key": bad_key})

    letter = event_row(record(value, bad_key.encode()))

    assert isinstance(letter, DeadLetter)
    assert "session_key" in letter.reason


def test_a_batch_splits_into_rows_and_letters_in_order() -> None:
    ok = encode(envelope(KEY, text_event("e1", "inv1", 1.0, "x")))
    planned = batch_rows(
        [record(ok, offset=1), record(b"?", offset=2), record(ok, offset=3)], PARTITIONS
    )

    assert [r.offset for r in planned.rows] == [1, 3]
    assert [letter.source_offset for letter in planned.letters] == [2]


def test_a_record_off_its_keys_partition_is_a_dead_letter_as_the_projector_makes_it() -> None:
    ok = encode(envelope(KEY, text_event("e1", "inv1", 1.0, "x")))
    home = record(ok, offset=1)
    stray = SourceRecord("p.events", 5, 2, KEY.encode(), ok)

    planned = batch_rows([home, stray], PARTITIONS)
    projector = BatchProjector(ProjectorSettings(), SessionCache(1 << 20), partitions=PARTITIONS)
    outcome = projector.project([stray], lambda _partition, _key: None)

    assert [r.offset for r in planned.rows] == [1]
    (letter,) = planned.letters
    assert (letter.stage, letter.source_partition, letter.source_offset) == ("partition", 5, 2)
    assert "belongs to partition 3 of 12" in letter.reason
    assert [(d.stage, d.reason) for d in outcome.dead_letters] == [(letter.stage, letter.reason)]


def test_a_batch_with_a_row_outside_its_range_is_refused() -> None:
    ok = encode(envelope(KEY, text_event("e1", "inv1", 1.0, "x")))
    row = event_row(record(ok, offset=9))
    assert isinstance(row, EventRow)

    Batch("t", {3: 9}, {3: 10}, [row]).check()
    for starts, ends in (({3: 10}, {3: 12}), ({3: 0}, {3: 9}), ({4: 0}, {4: 20}), ({3: 5}, {3: 4})):
        with pytest.raises(FenceError, match="records outside"):
            Batch("t", starts, ends, [row]).check()
