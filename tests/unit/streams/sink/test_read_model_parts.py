"""The sink's read-model parts that need no database: cache, memory apps, forks, state plan."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from projections.fold.fork import ForkSource, fork_event
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance
from schemas.codec import encode
from schemas.dead_letter import DeadLetter
from schemas.keys import Offset, SessionKey
from streams.batch.records import SourceRecord
from streams.sink.read_model.batch_memories import MemoryApps, MemoryPlan
from streams.sink.read_model.batch_statuses import status_at
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.state_tables import StatePlan, state_plan
from streams.sink.rows import batch_rows
from streams.sink.settings import SinkSettings
from tests.support.events import envelope, logged_event, summary_event, text_event

KEY = SessionKey("acme/support/u1/s2")


def states(count: int) -> list[HistoryState]:
    made = []
    for number in range(count):
        state, _ = advance(None, number, envelope(KEY, text_event(f"e{number}", "i", 1.0, "x")))
        made.append(state)
    return made


def test_the_cache_drops_the_least_recently_used_and_whole_partitions() -> None:
    a, b, c = states(3)
    cache = HistoryCache(2)
    cache.put_all({"a": (0, a), "b": (1, b)})
    assert cache.get("a", 0) is a  # a is now the most recently used
    cache.put_all({"c": (0, c)})
    assert (cache.get("b", 1), cache.get("a", 0), cache.get("c", 0)) == (None, a, c)
    assert cache.get("a", 1) is None  # on another partition: not this session's state
    cache.drop_partitions([0])
    assert len(cache) == 0
    with pytest.raises(ValueError, match="at least one"):
        HistoryCache(0)


def test_memory_apps_are_every_app_none_or_the_named_ones() -> None:
    assert MemoryApps.parse("*").feeds("anything")
    assert not MemoryApps.parse("").feeds("support")
    named = MemoryApps.parse(" support, sales ")
    assert (named.feeds("support"), named.feeds("sales"), named.feeds("billing")) == (
        True,
        True,
        False,
    )
    with pytest.raises(ValueError, match="every app"):
        MemoryApps.parse("*,support")


def test_a_row_leaving_the_kept_statuses_is_forgotten_and_one_coming_back_remembered() -> None:
    plan = MemoryPlan(MemoryApps.parse("support"))
    plan.note_change(KEY, 1, 5, EventStatus.LIVE, EventStatus.REWOUND)
    plan.note_change(KEY, 1, 6, EventStatus.REWOUND, EventStatus.MASKED)
    plan.note_change(KEY, 1, 7, EventStatus.LIVE, EventStatus.MASKED)  # kept both times
    # Not fed (explicit mode), yet a memory record may have given it a memory.
    plan.note_change("acme/sales/u1/s2", 1, 8, EventStatus.LIVE, EventStatus.REWOUND)
    plan.note_new(logged_event(KEY, summary_event("s", 1.0, 2.0, 3.0), 9), 1, EventStatus.LIVE)
    plan.note_new(logged_event(KEY, text_event("r", "i", 4.0, "x"), 10), 1, EventStatus.REWOUND)
    assert plan.removed == [(1, 5), (1, 8)]
    assert plan.readded == {1: {6}}
    assert [(m.offset, m.kind) for m in plan.added] == [(9, "summary")]


def test_status_at_finds_applied_records_by_offset_only() -> None:
    first, _ = advance(None, 3, envelope(KEY, text_event("e1", "i", 1.0, "x")))
    second, _ = advance(first, 8, envelope(KEY, summary_event("s", 1.0, 1.0, 2.0)))
    assert (status_at(second, 3), status_at(second, 8)) == (EventStatus.MASKED, EventStatus.LIVE)
    assert (status_at(second, 5), status_at(None, 3)) == (None, None)


def test_a_malformed_fork_record_is_a_dead_letter_and_a_valid_one_a_row() -> None:
    valid = fork_event(
        ForkSource(SessionKey("acme/support/u1/s1"), Offset(4)), event_id="f", timestamp=1.0
    )
    itself = fork_event(ForkSource(KEY, Offset(4)), event_id="g", timestamp=1.0)
    records = [
        SourceRecord("p.events", 0, offset, KEY.encode(), encode(envelope(KEY, event)))
        for offset, event in enumerate((valid, itself))
    ]
    planned = batch_rows(records, partitions=1)
    assert [row.offset for row in planned.rows] == [0]
    assert [e.envelope.event.id for e in planned.events] == ["f"]
    (letter,) = planned.letters
    assert isinstance(letter, DeadLetter)
    assert (letter.stage, letter.source_offset) == ("fold", 1)
    assert "fork" in letter.reason


def test_the_memory_apps_setting_is_checked_when_the_settings_are_read() -> None:
    assert SinkSettings(memory_apps="support,sales").memory_apps == "support,sales"
    with pytest.raises(ValidationError, match="every app"):
        SinkSettings(memory_apps="*,support")


def test_the_state_plan_rereads_a_session_that_lost_a_write_and_the_rows_that_may_win() -> None:
    other = SessionKey("acme/support/u1/s3")
    writing = text_event("w", "i", 1.0, "x", actions={"stateDelta": {"n": 1, "temp:t": 2}})
    plain = text_event("p", "i", 1.0, "x")
    batch = [(KEY, writing, 10), (KEY, plain, 11), (other, writing, 12), (KEY, writing, 13)]
    records = [
        SourceRecord("p.events", 0, offset, key.encode(), encode(envelope(key, event)))
        for key, event, offset in batch
    ]
    planned = batch_rows(records, partitions=1)
    # An earlier row of KEY masked (still counted), one of `other` deleted (its writes may go).
    updates = {(0, 3): EventStatus.MASKED, (0, 4): EventStatus.DELETED}
    owners = {(0, 3): str(KEY), (0, 4): str(other)}

    plan = state_plan(planned.rows, planned.events, updates, owners)

    assert plan == StatePlan(rewritten=(str(other),), places=((0, 3), (0, 10), (0, 13)))
    assert state_plan(planned.rows[1:2], planned.events[1:2], {}, {}) == StatePlan()
