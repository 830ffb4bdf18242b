"""A projection that released its history answers as the whole one does, or asks for the history.

The oracle is the projection that never releases anything, folded in
lockstep with the one that does: after every record and at random points a
release, every decision, snapshot (counters, boundary, context fingerprint)
and the view's contents must be the same. When the released projection
raises :class:`~projections.retention.retained_vector.NeedsHistory`, the test does what
the projector does: it rebuilds the projection from the records so far
(:func:`~projections.compaction.decision.replay_decisions`) and applies
again. The hand-worked cases pin what is released, what asks for the
history, and the one rule that changes (a copy of a released event is not a
retry).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pvector

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions, step
from projections.contents.assembly import ContentsRequest
from projections.contents.snapshot import to_snapshot
from projections.fold.projection import SessionProjection, apply, context_contents, project
from projections.retention.log_retention import _position, released_events, retained
from projections.retention.retained_vector import NeedsHistory, RetainedVector, retained_vector
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    call_event,
    logged,
    response_event,
    rewind_event,
    summary_event,
    text_event,
)
from tests.support.ordered import Orderer, compaction_configs
from tests.support.strategies import session_events

# -- the vector -----------------------------------------------------------------------------


def test_a_released_vector_keeps_positions_and_refuses_what_it_let_go() -> None:
    vector = retained_vector(list("abcdef")).released(2)
    assert len(vector) == 6
    assert (vector[2], vector[5], vector[-1], vector[-4]) == ("c", "f", "f", "c")
    assert list(vector[3:]) == ["d", "e", "f"]
    assert list(vector[2:4]) == ["c", "d"]
    assert list(vector[6:]) == []
    assert list(itertools.islice(reversed(vector), 4)) == ["f", "e", "d", "c"]
    with pytest.raises(NeedsHistory):
        vector[1]
    with pytest.raises(NeedsHistory):
        vector[-5]
    with pytest.raises(NeedsHistory):
        vector[1:]
    with pytest.raises(NeedsHistory):
        list(vector)
    with pytest.raises(NeedsHistory):
        list(reversed(vector))
    with pytest.raises(IndexError):
        vector[6]
    with pytest.raises(IndexError):
        vector[-7]
    assert vector.append("g")[6] == "g"
    assert len(vector) == 6
    assert vector.released(1) is vector
    assert vector.released(2) is vector
    assert vector.released(4) == RetainedVector(retained_vector(["e", "f"]).tail, 4)


def test_a_vector_that_released_nothing_is_a_plain_sequence() -> None:
    vector = retained_vector([1, 2, 3])
    assert list(vector) == [1, 2, 3]
    assert list(reversed(vector)) == [3, 2, 1]
    assert vector[0:] == vector.tail
    assert 2 in vector
    assert vector.index(3) == 2


# -- the lockstep property ------------------------------------------------------------------


def _rebuilt(records: list[LoggedEvent], config: CompactionConfig) -> SessionProjection:
    """The projection the projector rebuilds from the log: the whole fold, decisions replayed."""
    return replay_decisions(SESSION, records, config)[0]


def _snapshot_of(
    projection: SessionProjection, records: list[LoggedEvent], config: CompactionConfig
) -> tuple[Any, SessionProjection]:
    try:
        return to_snapshot(projection), projection
    except NeedsHistory:
        rebuilt = _rebuilt(records, config)
        return to_snapshot(rebuilt), rebuilt


def _subset(
    kept: Mapping[str, Any], whole: Mapping[str, Any], released: Callable[[str], bool]
) -> None:
    """`kept` is `whole` without entries whose keys were released."""
    assert all(whole[key] == value for key, value in kept.items())
    assert all(released(key) for key in whole if key not in kept)


def _same(kept: SessionProjection, whole: SessionProjection) -> None:
    """Equal but for what retention released, which the released ids name."""
    assert replace(
        kept,
        log=whole.log,
        view=whole.view,
        invocations=whole.invocations,
        summaries=whole.summaries,
        gate_memo=None,
    ) == replace(whole, gate_memo=None)
    ids = kept.log.released
    assert kept.view.released == ids

    def invocation(key: str) -> bool:
        return ids.has("invocation", key)

    def call(key: str) -> bool:
        return ids.has("call", key)

    _subset(kept.log.first_positions, whole.log.first_positions, invocation)
    order, whole_order = kept.log.order, whole.log.order
    assert order._replace(invocations=pmap(), call_positions=pmap()) == whole_order._replace(
        invocations=pmap(), call_positions=pmap()
    )
    _subset(order.invocations, whole_order.invocations, invocation)
    _subset(order.call_positions, whole_order.call_positions, call)
    counts, whole_counts = kept.invocations, whole.invocations
    assert (counts.total, counts.previous_end, counts.new_invocations) == (
        whole_counts.total,
        whole_counts.previous_end,
        whole_counts.new_invocations,
    )
    _subset(counts.latest_timestamps, whole_counts.latest_timestamps, invocation)
    assert kept.summaries.survivors == whole.summaries.survivors
    _subset(
        kept.summaries.request_ids,
        whole.summaries.request_ids,
        lambda key: ids.has("request", key),
    )
    assert kept.view.call_ids <= whole.view.call_ids
    assert all(call(key) for key in whole.view.call_ids - kept.view.call_ids)
    first = kept.log.live.first
    assert list(kept.log.live.tail) == list(whole.log.live[first:])
    assert list(kept.log.live_sizes.tail) == list(whole.log.live_sizes[first:])
    held = kept.log.records.first
    assert list(kept.log.records.tail) == list(whole.log.records[held:])
    assert list(kept.log.sizes.tail) == list(whole.log.sizes[held:])


def _retained_lockstep(
    events: list[Event], config: CompactionConfig, draw: Callable[[Any], Any], break_order: bool
) -> tuple[int, int]:
    orderer = Orderer(draw, break_order)
    kept = whole = SessionProjection(SESSION)
    records: list[LoggedEvent] = []
    requested: CompactionRequest | None = None
    rebuilds = released = 0
    for serial, generated in enumerate(events):
        waiting = whole.in_flight is not None
        for item in orderer.incoming(generated, serial, requested, waiting):
            record = logged([item], [len(records) + 1])[0]
            expected = step(whole, record, config)
            try:
                got = step(kept, record, config)
            except NeedsHistory:
                rebuilds += 1
                got = step(_rebuilt(records, config), record, config)
            records.append(record)
            assert got.request == expected.request, f"at offset {record.offset}"
            requested = expected.request or requested
            whole, kept = expected.projection, got.projection
            if draw(st.integers(0, 3)) == 0:
                kept = retained(kept, config, step=draw(st.integers(1, 4)))
                released = max(released, released_events(kept))
            expected_snapshot = to_snapshot(whole)
            snapshot, kept = _snapshot_of(kept, records, config)
            assert snapshot == expected_snapshot, f"at offset {record.offset}"
            _same(kept, whole)
    return rebuilds, released


@settings(max_examples=300, deadline=None)
@given(session_events(max_invocations=10), compaction_configs(), st.booleans(), st.data())
def test_a_released_projection_decides_and_reads_as_the_whole_one(
    events: list[Event], config: CompactionConfig, break_order: bool, data: st.DataObject
) -> None:
    rebuilds, released = _retained_lockstep(events, config, data.draw, break_order)
    note(f"released: {released > 0}")
    note(f"rebuilt: {rebuilds > 0}")


# -- hand-worked cases ----------------------------------------------------------------------

#: The core bench's workload: a rolling summary every four invocations of about ten events.
BENCH_CONFIG = CompactionConfig(compaction_interval=4, overlap_size=1)


def _bench_fold(events: int, *, every: int) -> tuple[SessionProjection, SessionProjection]:
    records = bench_session(events)
    whole, _ = replay_decisions(BENCH_SESSION, records, BENCH_CONFIG)
    kept = SessionProjection(BENCH_SESSION)
    for start in range(0, events, every):
        kept, _ = replay_decisions(
            BENCH_SESSION, records[start : start + every], BENCH_CONFIG, start=kept
        )
        kept = retained(kept, BENCH_CONFIG)
    return kept, whole


def test_a_long_session_holds_a_bounded_tail_and_answers_as_the_whole_one() -> None:
    kept, whole = _bench_fold(3_000, every=100)
    assert len(whole.log.live.tail) == 3_000
    # The tail reaches back to the overlap invocation behind the newest summary's window:
    # a few invocations of about ten events, plus the batch since the last release.
    assert len(kept.log.live.tail) < 250
    assert len(kept.log.records.tail) == len(kept.log.live.tail)
    assert len(kept.log.stored_by_id) <= len(kept.log.records.tail)
    assert to_snapshot(kept) == to_snapshot(whole)
    assert context_contents(kept) == context_contents(whole)


def test_a_release_frees_nothing_until_a_summary_bounds_the_tail() -> None:
    events = [text_event(f"e{i}", f"inv{i // 2}", 100.0 + i) for i in range(200)]
    projection = project(SESSION, logged(events, list(range(200))))
    assert retained(projection, BENCH_CONFIG, step=1) is projection


def _released_session() -> tuple[SessionProjection, list[LoggedEvent]]:
    """inv0..inv9 of two events each, a summary over inv0..inv7, inv10; released to the tail."""
    events: list[Event] = []
    for invocation in range(10):
        base = 100.0 + 2 * invocation
        events.append(call_event(f"c{invocation}", f"inv{invocation}", base, f"call{invocation}"))
        events.append(
            response_event(f"r{invocation}", f"inv{invocation}", base + 1, f"call{invocation}")
        )
    events.append(summary_event("s1", 100.0, 115.0, 130.0))
    events.append(text_event("t", "inv10", 131.0))
    records = logged(events, list(range(len(events))))
    projection = project(SESSION, records)
    return retained(
        projection, CompactionConfig(compaction_interval=2, overlap_size=0), step=1
    ), records


def test_a_release_keeps_the_tail_from_the_decision_start() -> None:
    kept, records = _released_session()
    # The first event newer than the summary's end (115.0) opens inv8, at position 16.
    assert released_events(kept) == 16
    assert kept.log.records.first == 16
    assert [r.offset for r in kept.log.live.tail] == [r.offset for r in records[16:]]
    assert set(kept.log.stored_by_id) == {r.envelope.event.id for r in records[16:]}
    # The covered calls of inv0..inv7 are released from the view's index; inv8's are not covered.
    assert all(kept.view.released.has("call", f"call{i}") for i in range(8))
    assert not kept.view.released.has("call", "call8")
    assert kept.log.released.has("invocation", "inv7")
    assert not kept.log.released.has("invocation", "inv8")
    assert set(kept.log.first_positions) == {"inv8", "inv9", "cmp-s1", "inv10"}
    assert kept.invocations.total == 11
    assert context_contents(kept) == context_contents(project(SESSION, records))


def test_a_rewind_to_a_known_invocation_asks_for_the_history() -> None:
    kept, _ = _released_session()
    rewind = logged([rewind_event("rw", "inv9", 140.0)], [100])[0]
    with pytest.raises(NeedsHistory):
        apply(kept, rewind)
    # To an unknown invocation: only itself goes, nothing is read.
    unknown = logged([rewind_event("rw", "nowhere", 140.0)], [100])[0]
    assert apply(kept, unknown).log.live == kept.log.live


def test_a_read_for_another_agent_asks_for_the_history() -> None:
    kept, _ = _released_session()
    with pytest.raises(NeedsHistory):
        context_contents(kept, ContentsRequest(agent_name="other"))


def test_a_new_answer_to_a_released_covered_call_asks_for_the_history() -> None:
    kept, records = _released_session()
    late = logged([response_event("late", "inv10", 132.0, "call3")], [101])[0]
    with pytest.raises(NeedsHistory):
        apply(kept, late)
    # The whole projection restores the covered call beside its late answer.
    assert context_contents(project(SESSION, [*records, late])) != context_contents(
        project(SESSION, records)
    )


def test_a_retry_is_ignored_and_a_copy_of_a_released_event_asks_for_the_history() -> None:
    events = [text_event(f"e{i}", f"inv{i // 2}", 100.0 + i) for i in range(20)]
    events += [summary_event("s1", 100.0, 115.0, 130.0), text_event("t", "inv10", 131.0)]
    records = logged(events, list(range(len(events))))
    config = CompactionConfig(compaction_interval=2, overlap_size=0)
    kept = retained(project(SESSION, records), config, step=1)
    assert released_events(kept) == 16
    held, released = records[-1].envelope.event, records[0].envelope.event
    retry = apply(kept, logged([held], [200])[0])
    assert retry.log.live == kept.log.live  # a retry: only its offset is recorded
    assert retry.last_offset == 200
    with pytest.raises(NeedsHistory, match="inv0"):
        apply(kept, logged([released], [201])[0])  # its invocation was released
    whole = project(SESSION, [*records, logged([released], [201])[0]])
    assert len(whole.log.live) == len(records)  # the whole log knows it: a retry


def test_an_event_that_breaks_the_order_of_a_released_projection_asks_for_the_history() -> None:
    kept, _ = _released_session()
    late = logged([text_event("late", "inv10", 120.0)], [100])[0]  # older than the newest
    with pytest.raises(NeedsHistory, match="out of order"):
        apply(kept, late)


def test_a_released_invocation_id_reused_or_rewound_to_asks_for_the_history() -> None:
    kept, _ = _released_session()
    again = logged([text_event("again", "inv2", 140.0)], [100])[0]
    with pytest.raises(NeedsHistory, match="inv2"):
        apply(kept, again)
    rewind = logged([rewind_event("rw", "inv2", 140.0)], [100])[0]
    with pytest.raises(NeedsHistory, match="inv2"):
        apply(kept, rewind)


def _answering(request_id: str) -> dict[str, Any]:
    return {"ctxstream": {"compaction_request_id": request_id}}


def _session_with_answered_requests() -> list[LoggedEvent]:
    """inv0..inv9 (a call and its answer each, one second apart from 100.0), summary s0
    answering req-0 after inv1, summary s1 answering req-1 over inv0..inv7, inv10.

    Live positions: inv0 0-1, inv1 2-3, s0 4, inv<k> 2k+1 and 2k+2 for k >= 2 (inv8 at 17),
    s1 21, inv10 22. s1 ends at r7's 116.0, so the decision start is inv8's call at 117.0.
    """
    events: list[Event] = []
    timestamp = 100.0
    for invocation in range(10):
        events.append(
            call_event(f"c{invocation}", f"inv{invocation}", timestamp, f"call{invocation}")
        )
        events.append(
            response_event(f"r{invocation}", f"inv{invocation}", timestamp + 1, f"call{invocation}")
        )
        timestamp += 2
        if invocation == 1:
            events.append(
                summary_event("s0", 100.0, 103.0, 104.0, custom_metadata=_answering("req-0"))
            )
            timestamp += 1
    events.append(summary_event("s1", 100.0, 116.0, 121.0, custom_metadata=_answering("req-1")))
    events.append(text_event("t", "inv10", 122.0))
    return logged(events, list(range(len(events))))


def test_a_release_drops_every_map_entry_of_the_ids_only_released_events_named() -> None:
    whole = project(SESSION, _session_with_answered_requests())
    assert set(whole.summaries.request_ids) == {"req-0", "req-1"}
    kept = retained(whole, CompactionConfig(compaction_interval=2, overlap_size=0), step=1)
    assert released_events(kept) == 17
    held = {"inv8", "inv9", "cmp-s1", "inv10"}
    assert dict(kept.summaries.request_ids) == {"req-1": 21}
    assert kept.log.released.has("request", "req-0")
    assert not kept.log.released.has("request", "req-1")
    assert dict(kept.log.order.invocations) == {"inv8": 17, "inv9": 19, "cmp-s1": 21, "inv10": 22}
    assert set(kept.log.first_positions) == held
    assert dict(kept.log.order.call_positions) == {"call8": 17, "call9": 19}
    assert set(kept.view.call_ids) == {"call8", "call9"}
    # The invocation counts forget the released invocations but still count them.
    counts = kept.invocations
    assert set(counts.invocation_ids) == {"inv8", "inv9", "inv10"}
    assert set(counts.latest_timestamps) == {"inv8", "inv9", "inv10"}
    assert (counts.total, counts.released) == (11, 8)


def test_a_release_runs_once_exactly_step_live_events_can_go() -> None:
    whole = project(SESSION, _session_with_answered_requests())
    config = CompactionConfig(compaction_interval=2, overlap_size=0)
    assert released_events(retained(whole, config, step=17)) == 17
    assert retained(whole, config, step=18) is whole


class _Held(NamedTuple):
    offset: int


class _CountedReads(RetainedVector[_Held]):
    """Records at `offsets`, the first `first` released, failing past `limit` reads by position."""

    __slots__ = ("limit", "reads")

    def __init__(self, offsets: list[int], first: int, limit: int) -> None:
        super().__init__(pvector(_Held(offset) for offset in offsets[first:]), first)
        self.limit, self.reads = limit, 0

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        assert self.reads <= self.limit, "a binary search reads O(log n) positions"
        return super().__getitem__(index)


def test_the_held_record_at_an_offset_is_found_in_log_n_reads() -> None:
    offsets = [3 * n + 10 for n in range(8)]  # 10, 13, ..., 31: rising, with gaps
    for first in (0, 3):
        for position in range(first, 8):
            records: Any = _CountedReads(offsets, first, limit=4)  # ceil(log2(8 + 1))
            assert _position(records, Offset(offsets[position])) == position
