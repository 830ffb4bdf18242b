"""The view's coverage, awaited ids and restorable tool events, written out by hand."""

from __future__ import annotations

from pyrsistent import pset

from projections.contents.assembly import ContentsRequest
from projections.contents.context_view import note_live_event, rebuild_view, view_events
from projections.fold.projection import context_contents, empty_projection, project
from projections.fold.rebuild import rebuild_contents
from schemas.event import Content
from tests.support.events import (
    SESSION,
    call_event,
    event,
    ids,
    logged,
    resp,
    response_event,
    summary_event,
    text_event,
)


def _texts(contents: list[Content]) -> list[list[str]]:
    return [[part.text or "" for part in content.parts or []] for content in contents]


def _coverage(ranges: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    summaries = [
        summary_event(f"s{number}", start, end, 20.0 + number)
        for number, (start, end) in enumerate(ranges)
    ]
    view = rebuild_view(ContentsRequest(), logged(summaries, range(len(summaries))))
    return tuple(zip(view.coverage.starts, view.coverage.ends, strict=True))


def test_touching_ranges_merge_and_an_inverted_one_covers_nothing() -> None:
    assert _coverage([(1.0, 3.0), (3.0, 5.0), (7.0, 6.0), (8.0, 9.0)]) == ((1.0, 5.0), (8.0, 9.0))


def test_a_one_instant_range_covers_its_instant() -> None:
    assert _coverage([(2.0, 2.0), (4.0, 6.0)]) == ((2.0, 2.0), (4.0, 6.0))


def test_overlapping_ranges_merge_from_the_earliest_start() -> None:
    assert _coverage([(5.0, 8.0), (1.0, 6.0)]) == ((1.0, 8.0),)


def test_a_rebuild_awaits_the_ids_branches_name_before_their_calls() -> None:
    # k1 is named by a branch and never called; k2 is named and called.
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            text_event("p1", "i1", 101.0, "progress", author="agent", branch="root.tool@k1"),
            text_event("p2", "i1", 102.0, "progress", author="agent", branch="root.tool@k2"),
            call_event("c2", "i1", 103.0, "k2"),
        ],
        [0, 1, 2, 3],
    )
    view = rebuild_view(ContentsRequest(), live)
    assert view.awaited_call_ids == pset({"k1"})
    assert view.call_ids == pset({"k2"})


def test_every_covered_event_of_an_answered_id_is_restorable() -> None:
    # The call of k1 and its first answer are covered by the summary; a later answer
    # of k1 is kept, so both covered events come back into the reduced list.
    events = [
        call_event("c1", "i1", 101.0, "k1"),
        response_event("r1", "i1", 102.0, "k1"),
        summary_event("s1", 100.0, 103.0, 104.0),
        response_event("r2", "i1", 105.0, "k1"),
    ]
    view = rebuild_view(ContentsRequest(), logged(events, [0, 1, 2, 3]))
    assert ids(view_events(view)) == ["c1", "r1", "s1", "r2"]


def test_an_idless_answer_does_not_stop_the_restoring_of_the_others() -> None:
    # The kept event answers "" (no id to restore by) and k1, whose call is covered.
    events = [
        call_event("c1", "i1", 101.0, "k1"),
        summary_event("s1", 100.0, 102.0, 103.0),
        event("r1", "agent", 104.0, [resp(""), resp("k1")], role="user"),
    ]
    view = rebuild_view(ContentsRequest(), logged(events, [0, 1, 2]))
    assert ids(view_events(view)) == ["c1", "s1", "r1"]


def test_of_two_identical_ranges_the_later_summary_is_shown() -> None:
    events = [
        text_event("u1", "i1", 100.0),
        summary_event("s1", 100.0, 100.5, 101.0, "first"),
        summary_event("s2", 100.0, 100.5, 102.0, "second"),
        text_event("u2", "i2", 103.0),
    ]
    view = rebuild_view(ContentsRequest(), logged(events, [0, 1, 2, 3]))
    assert ids(view_events(view)) == ["s2", "u2"]


def test_a_noted_call_records_its_id_and_keeps_the_awaited_ones() -> None:
    first = logged(
        [text_event("p1", "i1", 100.0, "progress", author="agent", branch="r.t@k9")], [0]
    )
    view = rebuild_view(ContentsRequest(), first)
    assert view.awaited_call_ids == pset({"k9"})
    live = [*first, *logged([call_event("c1", "i1", 101.0, "k1")], [1])]
    noted = note_live_event(view, live[1], live)
    assert noted.call_ids == pset({"k1"})
    assert noted.awaited_call_ids == pset({"k9"})
    again = [*live, *logged([call_event("c2", "i1", 102.0, "k1")], [2])]
    assert note_live_event(noted, again[2], again).call_ids == pset({"k1"})


def test_a_branch_segment_ending_in_at_names_no_id() -> None:
    live = logged(
        [text_event("p1", "i1", 100.0, "progress", author="agent", branch="root.tool@")], [0]
    )
    assert rebuild_view(ContentsRequest(), live).awaited_call_ids == pset()


def test_a_segment_with_two_ats_awaits_the_id_after_the_last() -> None:
    # Progress on agent.wf@tool@c1 names call c1 (the name is wf@tool), as tool-progress
    # visibility reads it. The view awaits c1, so when c1 is recorded it rebuilds, and
    # its contents equal those of a rebuild of the whole session: the progress is hidden
    # once c1 is recorded, and the summary covers the call.
    events = [
        text_event("u1", "i1", 100.0),
        text_event("p1", "i1", 101.0, "progress", author="wf", branch="agent.wf@tool@c1"),
        call_event("c1", "i1", 102.0, "c1", author="agent"),
        summary_event("s1", 102.0, 102.0, 103.0),
    ]
    live = logged(events, [0, 1, 2, 3])
    request = ContentsRequest(agent_name="agent")
    assert rebuild_view(request, live[:2]).awaited_call_ids == pset({"c1"})
    projection = project(SESSION, live, empty_projection(SESSION, request))
    assert _texts(context_contents(projection)) == _texts(rebuild_contents(live, request))
    assert _texts(rebuild_contents(live, request)) == [["x"], ["sum"]]


def test_an_event_covered_when_it_arrives_is_restorable() -> None:
    # c1 arrives after the summary that covers its timestamp; r1 answers it later.
    events = [
        summary_event("s1", 100.0, 102.0, 103.0),
        call_event("c1", "i1", 101.0, "k1"),
        response_event("r1", "i1", 104.0, "k1"),
    ]
    view = rebuild_view(ContentsRequest(), logged(events, [0, 1, 2]))
    assert ids(view_events(view)) == ["s1", "c1", "r1"]


def test_a_summary_masks_the_kept_events_at_both_ends_of_its_range_and_indexes_their_calls() -> (
    None
):
    # Kept before the summary: 100 and 101 lie at its bounds, 99 and 102 outside.
    events = [
        text_event("e0", "i1", 99.0),
        call_event("c1", "i1", 100.0, "k1"),
        response_event("r1", "i1", 101.0, "k1"),
        text_event("e3", "i1", 102.0),
        summary_event("s1", 100.0, 101.0, 103.0),
    ]
    view = rebuild_view(ContentsRequest(), logged(events, range(5)))
    assert ids([record.envelope.event for record in view.raw]) == ["e0", "e3"]
    assert [record.offset for record in view.covered_tools["k1"]] == [1, 2]
    assert [record.envelope.event.id for record in view.summaries] == ["s1"]
