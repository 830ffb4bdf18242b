"""Invocation counts: the live invocations and the sliding window's new ones (reference §4)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pmap, pset

from projections.fold.invocations import (
    InvocationCounts,
    count_invocations,
    note_live_event,
    released_invocations,
)
from schemas.event import Event
from tests.support.events import summary_event, text_event


def test_an_earlier_event_of_an_invocation_leaves_its_latest_timestamp() -> None:
    counts = count_invocations([text_event("e1", "i1", 105.0), text_event("e2", "i1", 101.0)])
    assert dict(counts.latest_timestamps) == {"i1": 105.0}


def test_an_earlier_event_does_not_make_a_new_invocation_old_at_the_next_summary() -> None:
    # i1 ends at 105: still after the second summary's end 104, a late event at 101 or not.
    counts = count_invocations(
        [
            text_event("e1", "i1", 105.0),
            summary_event("s1", 100.0, 103.0, 106.0),
            text_event("e2", "i1", 101.0),
            summary_event("s2", 100.0, 104.0, 107.0),
        ]
    )
    assert set(counts.new_invocations) == {"i1"}
    assert counts.since_compaction == 1


def test_a_summary_ending_earlier_leaves_an_invocation_ending_exactly_there_old() -> None:
    # s2 moves the bar back from 103 to 100: i2 (102) is new again, i1 (100) is not.
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "i2", 102.0),
            summary_event("s1", 100.0, 103.0, 104.0),
            summary_event("s2", 100.0, 100.0, 105.0),
        ]
    )
    assert counts.previous_end == 100.0
    assert set(counts.new_invocations) == {"i2"}
    assert counts.since_compaction == 1


def test_released_invocations_leave_the_ids_and_still_count_in_the_total() -> None:
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "i2", 101.0),
            summary_event("s1", 100.0, 101.0, 102.0),
            text_event("e3", "i3", 103.0),
        ]
    )
    released = released_invocations(counts, ["i1", "i2", "unknown"])
    assert set(released.invocation_ids) == {"i3"}
    assert dict(released.latest_timestamps) == {"i3": 103.0}
    assert released.released == 2  # "unknown" was never live: not counted
    assert released.total == 3
    assert set(released.new_invocations) == {"i3"}
    assert released.previous_end == 101.0


def test_releasing_a_scoped_invocation_drops_its_id_only() -> None:
    # A scoped invocation has an id but no latest timestamp (the sliding window skips it).
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "scoped", 101.0, isolation_scope="sub"),
        ]
    )
    assert dict(counts.latest_timestamps) == {"i1": 100.0}
    released = released_invocations(counts, ["scoped"])
    assert set(released.invocation_ids) == {"i1"}
    assert dict(released.latest_timestamps) == {"i1": 100.0}
    assert (released.released, released.total) == (1, 2)


def test_releasing_nothing_live_changes_nothing() -> None:
    counts = count_invocations([text_event("e1", "i1", 100.0)])
    assert released_invocations(counts, ["other"]) == counts
    assert released_invocations(counts, []) == counts


def test_a_scoped_event_of_a_new_invocation_keeps_the_released_count() -> None:
    counts = released_invocations(
        count_invocations([text_event("e1", "i1", 100.0), text_event("e2", "i2", 101.0)]),
        ["i1"],
    )
    assert counts.total == 2
    after = note_live_event(counts, text_event("e3", "i3", 102.0, isolation_scope="sub"))
    assert after.released == 1
    assert set(after.invocation_ids) == {"i2", "i3"}
    assert after.total == 3


# -- the fold against the definitions --------------------------------------------------------

_INVOCATIONS = st.sampled_from(["", "i1", "i2", "i3"])
_TIMES = st.sampled_from([0.0, -1.0, 1.0, 2.0, 3.0, 5.0, 8.0])
_EVENT = st.one_of(
    st.tuples(st.just("raw"), _INVOCATIONS, _TIMES, st.sampled_from([None, None, "sub"])),
    st.tuples(st.just("summary"), st.just(""), _TIMES, st.sampled_from([None, None, "sub"])),
)


def _events(drawn: list[tuple[str, str, float, str | None]]) -> list[Event]:
    events: list[Event] = []
    for serial, (kind, invocation, stamp, scope) in enumerate(drawn):
        if kind == "raw":
            events.append(text_event(f"e{serial}", invocation, stamp, isolation_scope=scope))
        else:  # a summary ending at `stamp` (0.0: no end, which the bar ignores)
            events.append(summary_event(f"s{serial}", 0.0, stamp, 50.0, isolation_scope=scope))
    return events


@settings(max_examples=300, deadline=None)
@given(st.lists(_EVENT, max_size=30))
def test_counts_equal_the_definitions_after_every_event(
    drawn: list[tuple[str, str, float, str | None]],
) -> None:
    events = _events(drawn)
    counts = InvocationCounts()
    for length, event in enumerate(events, start=1):
        counts = note_live_event(counts, event)
        seen = events[:length]
        raw = [e for e in seen if e.actions.compaction is None]
        latest: dict[str, float] = {}
        for e in raw:
            if e.invocation_id and e.isolation_scope is None:
                latest[e.invocation_id] = max(latest.get(e.invocation_id, 0.0), e.timestamp)
        ends = [
            e.actions.compaction.end_timestamp
            for e in seen
            if e.actions.compaction is not None
            and e.isolation_scope is None
            and e.actions.compaction.end_timestamp
        ]
        previous_end = ends[-1] if ends else 0.0
        assert set(counts.invocation_ids) == {e.invocation_id for e in raw if e.invocation_id}
        assert dict(counts.latest_timestamps) == latest, f"after {length}"
        assert counts.previous_end == previous_end
        assert set(counts.new_invocations) == {i for i, t in latest.items() if t > previous_end}
        assert all(counts.latest(i) == t and counts.knows(i) for i, t in latest.items())
        assert not any(counts.knows(i) for i in ("", "i1", "i2", "i3") if i not in latest)
        assert all(counts.latest(i) is None for i in ("", "i1", "i2", "i3") if i not in latest)
        # The same counts with every latest timestamp in the map: equal, whatever is kept apart.
        flat = InvocationCounts(
            counts.invocation_ids,
            pmap(latest),
            counts.previous_end,
            counts.new_invocations,
            counts.released,
        )
        assert flat == counts
        assert note_live_event(flat, event) == note_live_event(counts, event)


def test_counts_differing_in_any_part_are_not_equal() -> None:
    counts = count_invocations([text_event("e1", "i1", 5.0), text_event("e2", "i2", 6.0)])
    assert counts.current == "i2"
    assert counts != replace(counts, current_latest=7.0)
    assert counts != replace(counts, flushed=counts.flushed.set("i1", 4.0))
    assert counts != replace(counts, previous_end=1.0)
    assert counts != replace(counts, new_invocations=pset(["i1"]))
    assert counts != replace(counts, invocation_ids=pset(["i1"]))
    assert counts != replace(counts, released=1)
    assert counts.__eq__("counts") is NotImplemented


def test_releasing_the_current_invocation_forgets_its_latest_timestamp() -> None:
    counts = count_invocations([text_event("e1", "i1", 5.0), text_event("e2", "i2", 6.0)])
    released = released_invocations(counts, ["i2"])
    assert dict(released.latest_timestamps) == {"i1": 5.0}
    assert (released.current, released.knows("i2"), released.total) == ("", False, 2)
    again = note_live_event(released, text_event("e3", "i1", 7.0))
    assert dict(again.latest_timestamps) == {"i1": 7.0}
