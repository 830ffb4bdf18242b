"""The session log: every record, the live ones that rewinds leave, and their sizes."""

from __future__ import annotations

from projections.compaction.size_gate import event_json_size
from projections.fold.session_log import SessionLog, append_record, is_stored, stored_offsets
from projections.retention.released_ids import ReleasedIds
from schemas.event_digest import event_digest
from tests.support.events import logged, rewind_event, text_event


def test_a_rewind_keeps_the_size_of_every_record_it_leaves_live() -> None:
    events = [
        text_event("a1", "a", 100.0, "first question"),
        text_event("a2", "a", 101.0, "a long first answer", author="agent"),
        text_event("b1", "b", 102.0, "second"),
        rewind_event("rw", "b", 103.0),
    ]
    log = SessionLog()
    changed = []
    for record in logged(events, [0, 1, 2, 3]):
        log, moved = append_record(log, record)
        changed.append(moved)
    assert changed == [False, False, False, True]
    assert [record.envelope.event.id for record in log.live] == ["a1", "a2"]
    # The size-gate size of each live record: its event's JSON size.
    assert list(log.live_sizes) == [event_json_size(events[0]), event_json_size(events[1])]
    assert all(size > 0 for size in log.live_sizes)


def test_first_positions_and_the_id_index_follow_the_attributes_description() -> None:
    events = [
        text_event("a1", "a", 100.0),
        text_event("", "a", 101.0, "an event without id", author="agent"),
        text_event("b1", "b", 102.0),
        text_event("a1", "a", 103.0, "a1 again, changed"),
    ]
    log = SessionLog()
    for record in logged(events, [0, 1, 2, 3]):
        log, _ = append_record(log, record)
    assert dict(log.first_positions) == {"a": 0, "b": 2}
    # Empty ids are not indexed; an id maps to the latest event applied with it.
    assert set(log.stored_by_id) == {"a1", "b1"}
    assert log.stored_by_id["a1"].envelope.event is events[3]
    assert log.stored_by_id["a1"].offset == 3


def test_stored_offsets_names_the_ids_whose_stored_event_is_equal() -> None:
    first = text_event("a1", "a", 100.0)
    changed = text_event("a1", "a", 100.0, "a1 with other text")
    log = SessionLog()
    for record in logged([first, text_event("b1", "b", 102.0)], [40, 41]):
        log, _ = append_record(log, record)
    asked = {
        "a1": event_digest(first),
        "b1": event_digest(changed),  # same id, other fields: not a copy
        "c1": event_digest(first),  # never stored
        "": event_digest(first),
    }
    assert stored_offsets(log, asked) == {"a1": 40}
    assert stored_offsets(log, {"a1": event_digest(changed)}) == {}
    assert is_stored(log, first)
    assert not is_stored(log, changed)


def test_a_rewind_to_an_unknown_invocation_changes_nothing_live() -> None:
    # The docstring's example: live a1 + R(z) -> live a1, False.
    log = SessionLog()
    log, _ = append_record(log, logged([text_event("a1", "a", 100.0)], [0])[0])
    log, moved = append_record(log, logged([rewind_event("rw", "z", 101.0)], [1])[0])
    assert moved is False
    assert [record.envelope.event.id for record in log.live] == ["a1"]


def test_every_kind_of_record_keeps_the_released_ids() -> None:
    released = ReleasedIds().with_ids([("invocation", "gone"), ("call", "c0")])
    log = SessionLog(released=released)
    events = [
        text_event("a1", "a", 100.0),  # a live event
        rewind_event("rw1", "nowhere", 101.0),  # a rewind to an unknown invocation
        rewind_event("rw2", "a", 102.0),  # a rewind that recomputes the live list
    ]
    for record in logged(events, [0, 1, 2]):
        log, _ = append_record(log, record)
        assert log.released == released
        assert log.released.has("invocation", "gone")
        assert log.released.has("call", "c0")
