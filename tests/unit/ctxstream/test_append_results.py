"""Which records an append asks about, writes, and how each one's answer is put together."""

from __future__ import annotations

from ctxstream.appends.results import (
    AppendResult,
    CheckedRecord,
    lookup_digests,
    merged,
    unstored,
)
from schemas.keys import Offset


def _record(event_id: str, digest: str | None = "d") -> CheckedRecord:
    return CheckedRecord(b"k", event_id.encode(), event_id, digest)


def test_only_given_ids_seen_once_are_asked_about() -> None:
    records = [_record("a"), _record("fresh", None), _record("b"), _record("b"), _record("c", "x")]
    assert lookup_digests(records) == {"a": "d", "c": "x"}


def test_stored_records_are_not_written_and_answer_their_stored_offset() -> None:
    records = [_record("a"), _record("b"), _record("c"), _record("fresh", None)]
    stored = {"b": 7, "fresh": 3}  # an answer naming an id not asked about changes nothing
    to_write = unstored(records, stored)
    assert [record.event_id for record in to_write] == ["a", "c", "fresh"]
    assert merged(records, stored, [Offset(20), Offset(21), Offset(22)]) == [
        AppendResult(Offset(20)),
        AppendResult(Offset(7), duplicate=True),
        AppendResult(Offset(21)),
        AppendResult(Offset(22)),
    ]
