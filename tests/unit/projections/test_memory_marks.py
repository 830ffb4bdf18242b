"""Memory records: their wire shape, their checks, and that the fold passes over them.

The expectations are written by hand: a memory record is the sink's word on memory, so a
session's context, state, compaction decisions and history statuses are those of the same
session without it, and a deleted session stays deleted when one follows the deletion.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from ctxstream.appends.memory_record import checked_mark, memory_record
from ctxstream.errors import InvalidArgumentError
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions
from projections.contents.context_digest import digest_context
from projections.fold.projection import context_contents, project
from projections.fold.rebuild import effective_records
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from projections.history.incremental import advance
from projections.memory.memory_marks import PlacedMark, remembered
from schemas.codec import decode_envelope, encode
from schemas.deletion_mark import deletion_event
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from schemas.memory_mark import MemoryMark, is_memory_mark, memory_mark, memory_mark_event
from tests.support.events import SESSION, envelope, logged_event, session

ADD = memory_mark_event(MemoryMark("add"), event_id="m-add", timestamp=500.0)
DELETE_E1 = memory_mark_event(
    MemoryMark("delete", frozenset({"q0"})), event_id="m-del", timestamp=501.0
)


def _at(offset: int, event: Event) -> LoggedEvent:
    return logged_event(SESSION, event, offset)


def _without(records: list[LoggedEvent], offsets: set[int]) -> list[LoggedEvent]:
    return [record for record in records if record.offset not in offsets]


def _with_marks() -> tuple[list[LoggedEvent], set[int]]:
    """Two invocations (offsets 10..24, step 2) with marks at 11, 17 and 25."""
    records = session(2)
    marks = {11: ADD, 17: DELETE_E1, 25: ADD}
    mixed = sorted([*records, *(_at(o, e) for o, e in marks.items())], key=lambda r: r.offset)
    return mixed, set(marks)


def test_the_record_has_the_documented_wire_shape() -> None:
    event = memory_record(
        "acme/app/u1/s1", "delete", ["e2", "e1"], event_id="9f", timestamp=1733130010.0
    )
    assert encode(envelope(SESSION, event))
    assert event.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) == {
        "id": "9f",
        "author": "ctxstream",
        "timestamp": 1733130010.0,
        "customMetadata": {"ctxstream": {"memory": {"action": "delete", "ids": ["e1", "e2"]}}},
    }
    assert memory_mark(event) == MemoryMark("delete", frozenset({"e1", "e2"}))
    assert memory_mark(memory_record("a/b/c/d", "add", event_id="x", timestamp=1.0)) == (
        MemoryMark("add", None)
    )


@pytest.mark.parametrize(
    ("action", "ids", "message"),
    [
        ("forget", None, "^action: 'forget', expected one of add, delete"),
        ("add", "e1", "^ids: expected a list"),
        ("add", [], "^ids: 0 ids, expected 1 to 1000"),
        ("delete", ["e1", ""], r"^ids\[1\]: expected a non-empty string"),
        ("delete", ["x" * 257], r"^ids\[0\]: expected a non-empty string of at most 256"),
    ],
)
def test_bad_arguments_are_refused_naming_them(action: str, ids: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        checked_mark(action, ids)


def test_a_bad_session_key_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^session_key: "):
        memory_record("no-slashes", "add", event_id="x", timestamp=1.0)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"customMetadata": {"ctxstream": {"memory": "add"}}}, "must be an object, got str"),
        ({"customMetadata": {"ctxstream": {"memory": {"action": "x"}}}}, "'add' or 'delete'"),
        ({"customMetadata": {"ctxstream": {"memory": {"action": "add", "ids": []}}}}, "1 to"),
        (
            {"customMetadata": {"ctxstream": {"memory": {"action": "add", "ids": [3]}}}},
            r"ids\[0\] must be a non-empty string",
        ),
        (
            {"customMetadata": {"ctxstream": {"memory": {"action": "add", "when": 1}}}},
            "names only action and ids, not when",
        ),
        ({"customMetadata": {"ctxstream": {"memory": {"action": "add"}, "x": 1}}}, "names x"),
        ({"author": "user"}, "author is 'ctxstream', got 'user'"),
        ({"content": {"role": "user", "parts": [{"text": "hi"}]}}, "no content"),
        ({"actions": {"stateDelta": {"k": 1}}}, "carries no actions"),
    ],
)
def test_a_malformed_memory_record_is_refused_when_decoded(
    changes: dict[str, Any], problem: str
) -> None:
    raw = envelope(SESSION, ADD).model_dump(mode="json", by_alias=True)
    raw["event"] = {**raw["event"], **changes}
    with pytest.raises(ValidationError, match=f"malformed memory record: .*{problem}"):
        Envelope.model_validate(raw)
    with pytest.raises(DecodeError, match=problem):  # as the projector and the sink decode it
        decode_envelope(json.dumps(raw).encode())


def test_the_fold_passes_over_memory_records() -> None:
    mixed, marks = _with_marks()
    plain = _without(mixed, marks)
    with_marks, without = project(SESSION, mixed), project(SESSION, plain)
    assert with_marks.last_offset == 25
    assert context_contents(with_marks) == context_contents(without)
    assert digest_context(with_marks.view).fingerprint == digest_context(without.view).fingerprint
    assert with_marks.state == without.state
    assert with_marks.invocations == without.invocations
    assert [r.offset for r in with_marks.log.records] == [r.offset for r in plain]
    assert [r.offset for r in effective_records(mixed)] == [r.offset for r in plain]


def test_a_memory_record_keeps_a_deleted_session_deleted() -> None:
    records = [*session(1), _at(30, deletion_event(event_id="d", timestamp=300.0)), _at(31, ADD)]
    projection = project(SESSION, records)
    assert projection.deleted_at == 30
    assert projection.last_offset == 31
    statuses = classify_session(records)
    assert statuses[Offset(30)] is EventStatus.DELETION
    assert statuses[Offset(31)] is EventStatus.MEMORY


def test_memory_records_trigger_no_compaction() -> None:
    config = CompactionConfig(compaction_interval=1, overlap_size=0)
    mixed, marks = _with_marks()
    # One carrying an invocation id of its own would look like a new invocation's first event.
    mixed = [
        _at(r.offset, r.envelope.event.model_copy(update={"invocation_id": "inv-m"}))
        if r.offset == 17
        else r
        for r in mixed
    ]
    _, with_marks = replay_decisions(SESSION, mixed, config)
    _, without = replay_decisions(SESSION, _without(mixed, marks), config)
    assert with_marks  # the session does compact
    assert [(r.event_offsets, r.decided_at_offset) for r in with_marks] == [
        (r.event_offsets, r.decided_at_offset) for r in without
    ]


def test_history_gives_memory_records_their_status_and_leaves_the_rest() -> None:
    mixed, marks = _with_marks()
    statuses = classify_session(mixed)
    plain = classify_session(_without(mixed, marks))
    assert {o: s for o, s in statuses.items() if o in marks} == dict.fromkeys(
        sorted(marks), EventStatus.MEMORY
    )
    assert {o: s for o, s in statuses.items() if o not in marks} == plain
    state = None
    for record in mixed:
        state, changes = advance(state, record.offset, record.envelope)
        if record.offset in marks:
            assert [(c.offset, c.status) for c in changes] == [
                (Offset(record.offset), EventStatus.MEMORY)
            ]
    assert is_memory_mark(ADD)


@pytest.mark.parametrize(
    ("offset", "memory_id", "every", "expected"),
    [
        (0, "e1", False, False),  # the delete at 3 names e1 and is its latest
        (1, "e2", False, True),  # the add at 2; the delete at 3 names only e1
        (4, "e3", False, False),  # no record after it: explicit mode
        (4, "e3", True, True),  # no record after it: all mode
        (0, "e1", True, False),  # a delete wins over the all mode
        (3, "e1", False, False),  # the records at 3 and before do not count for 3
    ],
)
def test_the_latest_naming_record_decides(
    offset: int, memory_id: str, every: bool, expected: bool
) -> None:
    marks = [
        PlacedMark(3, MemoryMark("delete", frozenset({"e1"}))),
        PlacedMark(2, MemoryMark("add")),
    ]
    assert remembered(offset, memory_id, marks, every=every) is expected
