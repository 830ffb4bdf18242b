"""When a kept view advances from its own events, and when it must select from the whole list.

``batch_view`` advances a view by a batch from the view's kept events alone (the fast path
the sink takes for nearly every batch) unless the batch can touch what the view dropped
(projections/live_view/README.md, "Serving"). Each test builds a session by hand (ids
``e<position>``, offsets the positions), selects its view, adds a batch, and compares with
``select_live`` over the whole list. The first tests pin batches the rules let through (the
fast path answers, and right); the others, batches that would make the fast path wrong: a
rewind, a dropped call's id, a dropped invocation, a task scoped by a dropped call, a summary
ending below a dropped event, a window reaching past the view's first invocation, a suffix
moving back: the answer is None or the whole list's view.
"""

from __future__ import annotations

import pytest

from projections.live_view.kept_view import KeptView, batch_view, view_of
from schemas.event import Event
from tests.support.events import call_event, response_event, rewind_event
from tests.support.live_view_sessions import exchange, said, summary


def _advanced(
    before: list[Event], batch: list[Event], overlap: int
) -> tuple[KeptView | None, KeptView]:
    """The view of `before` advanced by `batch`, and the view of the whole list."""
    whole = [*before, *batch]
    view = view_of(list(enumerate(before)), overlap, len(before))
    records = [(len(before) + n, each, "live") for n, each in enumerate(batch)]
    advanced = batch_view(view, records, overlap, len(whole))
    return advanced, view_of(list(enumerate(whole)), overlap, len(whole))


def _offsets(view: KeptView) -> tuple[int, list[int]]:
    return view.live_from, [offset for offset, _ in view.kept]


def _assert_fast(before: list[Event], batch: list[Event], overlap: int) -> None:
    advanced, whole = _advanced(before, batch, overlap)
    assert advanced is not None, "the batch touches nothing the view dropped"
    assert _offsets(advanced) == _offsets(whole)


def _assert_right(before: list[Event], batch: list[Event], overlap: int) -> None:
    advanced, whole = _advanced(before, batch, overlap)
    assert advanced is None or _offsets(advanced) == _offsets(whole), _offsets(whole)


def _compacted(first: int = 0) -> list[Event]:
    """inv0 and inv1 covered by a summary, inv2 after it; the helper's reply routes."""
    return [
        *exchange(first, "inv0", 1.0, "helper"),
        *exchange(first + 2, "inv1", 3.0),
        summary(first + 4, 1.0, 4.0, 5.0),
        *exchange(first + 5, "inv2", 6.0),
    ]


@pytest.mark.parametrize("overlap", [0, 1])
def test_a_new_invocation_takes_the_fast_path_and_the_suffix_stays(overlap: int) -> None:
    batch = [said(7, "inv3", 8.0), said(8, "inv3", 9.0, "root")]
    _assert_fast(_compacted(), batch, overlap)


def test_a_view_that_dropped_nothing_advances_however_far_the_window_reaches() -> None:
    before = [said(0, "inv0", 1.0), said(1, "inv0", 2.0, "root")]
    _assert_fast(before, [said(2, "inv1", 3.0), said(3, "inv1", 4.0, "root")], 2)


def test_scoped_events_of_a_kept_or_a_new_scope_take_the_fast_path() -> None:
    before = [*_compacted(), said(7, "inv2", 7.5, "worker", isolation_scope="X")]
    batch = [
        said(8, "inv2", 8.0, "worker", isolation_scope="X"),
        said(9, "inv2", 8.5, "worker", isolation_scope="Y"),
    ]
    _assert_fast(before, batch, 0)


def test_an_unscoped_event_after_scoped_ones_takes_the_fast_path() -> None:
    scoped = {"isolation_scope": "X"}
    before = [
        *exchange(0, "inv0", 1.0, "worker", **scoped),
        summary(2, 1.0, 2.0, 3.0, **scoped),
        *exchange(3, "inv1", 4.0, "worker", **scoped),
    ]
    _assert_fast(before, [said(5, "inv2", 6.0)], 0)


def _summarized() -> list[Event]:
    return [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 3.0),
        *exchange(3, "inv1", 4.0),
    ]


def test_a_summary_ending_at_the_last_dropped_instant_takes_the_fast_path() -> None:
    _assert_fast(_summarized(), [summary(5, 0.0, 2.0, 6.0)], 0)


def test_a_rewind_brings_back_what_a_rewound_summary_covered() -> None:
    before = [
        *exchange(0, "inv0", 1.0),
        said(2, "inv1", 3.0),
        summary(3, 1.0, 2.0, 4.0, invocation_id="inv1"),
        said(4, "inv1", 5.0, "root"),
    ]
    _assert_right(before, [rewind_event("e5", "inv1", 6.0), said(6, "inv2", 7.0)], 0)


def _called(**args: object) -> list[Event]:
    """A call c1 and its result, both covered by a summary, then inv1."""
    call = call_event("e1", "inv0", 2.0, "c1", author="root")
    if args:
        body = call.model_dump(by_alias=True)
        body["content"]["parts"][0]["functionCall"]["args"] = args
        call = Event.model_validate(body)
    return [
        said(0, "inv0", 1.0),
        call,
        response_event("e2", "inv0", 3.0, "c1", author="root"),
        said(3, "inv0", 3.5, "root"),
        summary(4, 1.0, 3.5, 4.0),
        *exchange(5, "inv1", 5.0),
    ]


def test_a_result_posted_for_a_dropped_call_pulls_the_turn_back_to_it() -> None:
    posted = response_event("e7", "inv2", 7.0, "c1", author="user")
    _assert_right(_called(), [posted], 0)


def test_a_task_scoped_by_a_dropped_call_reads_that_call_as_its_input() -> None:
    task = said(7, "inv1", 7.0, "worker", isolation_scope="c1")
    _assert_right(_called(task="look it up"), [task], 0)


def test_a_late_event_of_a_dropped_invocation_makes_it_new_again() -> None:
    _assert_right(_summarized(), [said(5, "inv0", 6.0, "root")], 0)


def test_a_summary_ending_below_a_dropped_event_makes_its_invocation_new() -> None:
    _assert_right(_summarized(), [summary(5, 0.5, 1.5, 6.0)], 0)


def test_a_window_reaching_one_invocation_past_the_view_needs_the_whole_list() -> None:
    """Overlap 1: the view starts at inv1; a summary ending at 3 makes inv1 new, inv0 needed."""
    before = [
        *exchange(0, "inv0", 1.0),
        *exchange(2, "inv1", 3.0),
        summary(4, 1.0, 4.0, 5.0),
        *exchange(5, "inv2", 6.0),
    ]
    _assert_right(before, [summary(7, 0.0, 3.0, 8.0)], 1)


def test_a_result_for_an_open_call_kept_before_the_suffix_moves_the_suffix_back() -> None:
    before = [
        said(0, "inv0", 1.0),
        call_event("e1", "inv0", 2.0, "lr1", author="root", long_running_tool_ids=["lr1"]),
        said(2, "inv0", 3.0, "root"),
        summary(3, 1.0, 3.0, 4.0),
        *exchange(4, "inv1", 5.0),
    ]
    _assert_right(before, [response_event("e6", "inv2", 7.0, "lr1", author="user")], 0)
