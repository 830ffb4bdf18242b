"""The view noted one live event at a time, and what retention lets go of it, by hand.

Every contents check compares with ``rebuild_contents``: the session assembled
from scratch, without any view.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, cast, overload

import pytest
from pyrsistent import PMap, PVector, pset

from projections.contents.assembly import ContentsRequest
from projections.contents.context_view import (
    ContextView,
    empty_view,
    note_live_event,
    released_tools,
    view_contents,
    view_events,
)
from projections.fold.rebuild import rebuild_contents
from projections.retention.released_ids import ReleasedIds
from projections.retention.retained_vector import NeedsHistory
from schemas.event import Content
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    call,
    call_event,
    event,
    ids,
    logged,
    response_event,
    summary_event,
    text_event,
)

VIEW = ContentsRequest()


def _noted(
    live: Sequence[LoggedEvent], view: ContextView | None = None, first: int = 0
) -> ContextView:
    """`view` (an empty one) with ``live[first:]`` noted one at a time, each with the live
    list up to it."""
    view = empty_view(VIEW) if view is None else view
    for count in range(first + 1, len(live) + 1):
        view = note_live_event(view, live[count - 1], live[:count])
    return view


def _texts(contents: list[Content]) -> list[list[str]]:
    return [[part.text or "" for part in content.parts or []] for content in contents]


class _Unread(Sequence[LoggedEvent]):
    """A live list that fails the test when it is read."""

    def __len__(self) -> NoReturn:
        raise AssertionError("the live list was read")

    @overload
    def __getitem__(self, index: int) -> LoggedEvent: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[LoggedEvent]: ...

    def __getitem__(self, index: int | slice) -> NoReturn:
        raise AssertionError("the live list was read")

    def __iter__(self) -> Iterator[LoggedEvent]:
        raise AssertionError("the live list was read")


# -- call ids and awaited ids --------------------------------------------------


def test_a_hidden_call_still_hides_the_progress_of_its_tool() -> None:
    # The framework call is dropped from the contents (§1.5), but its id is a recorded
    # call id all the same (§8.2 rule 6): progress published under tool@k1 is hidden.
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            event("f1", "agent", 101.0, [call("k1", "adk_framework")]),
            text_event("p1", "i1", 102.0, "progress", author="agent", branch="root.tool@k1"),
            text_event("a1", "i1", 103.0, "done"),
        ],
        [0, 1, 2, 3],
    )
    view = _noted(live)
    assert view.call_ids == pset({"k1"})
    assert view.awaited_call_ids == pset()
    assert _texts(view_contents(view)) == [["x"], ["done"]]
    assert view_contents(view) == rebuild_contents(live, VIEW)


def test_an_empty_event_on_a_tool_branch_is_awaited_all_the_same() -> None:
    # The event shows nothing, yet its branch names k5 before any call records it.
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            event("p0", "agent", 101.0, branch="root.tool@k5"),
        ],
        [0, 1],
    )
    view = _noted(live)
    assert view.awaited_call_ids == pset({"k5"})
    assert view.call_ids == pset()
    assert ids(view_events(view)) == ["u1"]


def test_progress_noted_before_its_call_is_hidden_once_the_call_comes() -> None:
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            text_event("p1", "i1", 101.0, "progress", author="agent", branch="root.tool@k1"),
            call_event("c1", "i1", 102.0, "k1"),
        ],
        [0, 1, 2],
    )
    before = _noted(live[:2])
    assert before.awaited_call_ids == pset({"k1"})
    assert _texts(view_contents(before)) == [["x"], ["progress"]]
    after = _noted(live, before, 2)
    assert after.awaited_call_ids == pset()
    assert after.call_ids == pset({"k1"})
    assert ids(view_events(after)) == ["u1", "c1"]
    assert view_contents(after) == rebuild_contents(live, VIEW)


def test_a_call_nobody_awaited_does_not_read_the_live_list() -> None:
    # k9 is awaited; the new call records k1, which no branch named: noted in O(log n).
    first = logged(
        [text_event("p1", "i1", 100.0, "progress", author="agent", branch="root.tool@k9")], [0]
    )
    view = _noted(first)
    noted = note_live_event(view, logged([call_event("c1", "i1", 101.0, "k1")], [1])[0], _Unread())
    assert noted.call_ids == pset({"k1"})
    assert noted.awaited_call_ids == pset({"k9"})
    assert ids(view_events(noted)) == ["p1", "c1"]


def test_a_summary_records_the_call_ids_of_its_content() -> None:
    # A summary event whose content holds a call: k3 is recorded (every call id of the
    # live events counts), so the progress under tool@k3 after it is hidden.
    summary = summary_event(
        "s1", 100.0, 100.5, 101.0, content={"role": "model", "parts": [call("k3")]}
    )
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            summary,
            text_event("p1", "i1", 102.0, "progress", author="agent", branch="root.tool@k3"),
            text_event("u2", "i2", 103.0, "next"),
        ],
        [0, 1, 2, 3],
    )
    view = _noted(live)
    assert view.call_ids == pset({"k3"})
    assert ids(view_events(view)) == ["s1", "u2"]
    assert view_contents(view) == rebuild_contents(live, VIEW)


def test_a_summary_on_a_tool_branch_is_hidden_once_that_call_is_recorded() -> None:
    # The summary's branch names k7 before any call does; when c7 records k7 the summary
    # is the tool's progress (§8.2 rule 6) and no longer masks what it covered.
    live = logged(
        [
            text_event("u1", "i1", 100.0),
            summary_event("s1", 100.0, 100.5, 101.0, branch="root.tool@k7"),
            call_event("c7", "i1", 102.0, "k7"),
        ],
        [0, 1, 2],
    )
    before = _noted(live[:2])
    assert before.awaited_call_ids == pset({"k7"})
    assert ids(view_events(before)) == ["s1"]
    after = _noted(live, before, 2)
    assert after.awaited_call_ids == pset()
    assert ids(view_events(after)) == ["u1", "c7"]
    assert view_contents(after) == rebuild_contents(live, VIEW)


# -- what retention lets go ------------------------------------------------------


class _OnceIndex:
    """A covered-tools index that fails the test when an id is looked up twice.

    `released_tools` follows each id once (O(covered tool events)): a second look-up of
    one id means the walk goes round, and would never end.
    """

    def __init__(self, index: PMap[str, PVector[LoggedEvent]]) -> None:
        self._index = index
        self._asked: set[str | None] = set()

    def get(self, key: str | None, default: Any = None) -> Any:
        if key in self._asked:
            raise AssertionError(f"{key!r} was looked up twice")
        self._asked.add(key)
        return self._index.get(cast(str, key), default)

    def values(self) -> Any:
        return self._index.values()

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def evolver(self) -> Any:
        return self._index.evolver()


def _released(view: ContextView, from_offset: int) -> ContextView:
    guarded = cast(PMap[str, PVector[LoggedEvent]], _OnceIndex(view.covered_tools))
    return released_tools(
        ContextView(
            view.request,
            view.call_ids,
            view.awaited_call_ids,
            view.summaries,
            view.raw,
            guarded,
            view.released,
        ),
        from_offset,
        ReleasedIds(),
    )


def _covered_session() -> list[LoggedEvent]:
    # The summary covers c1, r1 and c2 (100..104); r2, kept, answers k2.
    return logged(
        [
            call_event("c1", "i1", 101.0, "k1"),
            response_event("r1", "i1", 102.0, "k1"),
            call_event("c2", "i1", 103.0, "k2"),
            summary_event("s1", 100.0, 104.0, 105.0),
            response_event("r2", "i2", 106.0, "k2"),
        ],
        [0, 1, 2, 3, 4],
    )


@pytest.fixture
def covered_view() -> ContextView:
    # Built in the fixture: the test's own time (what orders a mutation run's tests) is the
    # release alone, so a walk that goes round fails there first.
    return _noted(_covered_session())


def test_the_covered_calls_no_kept_event_names_are_released(covered_view: ContextView) -> None:
    kept = _released(covered_view, 5)
    assert sorted(kept.covered_tools) == ["k2"]
    assert kept.released.has("call", "k1")
    assert not kept.released.has("call", "k2")
    assert ids(view_events(kept)) == ["c2", "s1", "r2"]


def test_the_covered_tools_are_indexed_by_call_id(covered_view: ContextView) -> None:
    assert {
        key: ids([r.envelope.event for r in held])
        for key, held in covered_view.covered_tools.items()
    } == {
        "k1": ["c1", "r1"],
        "k2": ["c2"],
    }


def test_nothing_is_released_when_every_covered_call_is_named() -> None:
    view = _noted(_covered_session()[2:])  # c2, the summary, r2
    kept = _released(view, 5)
    assert sorted(kept.covered_tools) == ["k2"]
    assert not kept.released


def test_the_sibling_calls_of_a_restorable_call_are_kept() -> None:
    # c1 calls k1 and k2 in one event; r1 (covered) answers k2, r2 (kept) answers k1.
    # A read restores c1 for r2, then r1 for c1's sibling k2: both ids stay.
    live = logged(
        [
            event("c1", "agent", 101.0, [call("k1"), call("k2")]),
            response_event("r1", "i1", 102.0, "k2"),
            call_event("c3", "i1", 103.0, "k3"),
            summary_event("s1", 100.0, 104.0, 105.0),
            response_event("r2", "i2", 106.0, "k1"),
        ],
        [0, 1, 2, 3, 4],
    )
    kept = _released(_noted(live), 5)
    assert sorted(kept.covered_tools) == ["k1", "k2"]
    assert kept.released.has("call", "k3")
    assert ids(view_events(kept)) == ["c1", "r1", "s1", "r2"]


def test_a_covered_call_at_the_retention_start_is_kept() -> None:
    # Retention keeps the log from offset 2 on: c2 is there, so k2 stays, named or not.
    live = logged(
        [
            call_event("c1", "i1", 101.0, "k1"),
            call_event("c2", "i1", 102.0, "k2"),
            summary_event("s1", 100.0, 104.0, 105.0),
        ],
        [0, 2, 3],
    )
    kept = _released(_noted(live), 2)
    assert sorted(kept.covered_tools) == ["k2"]
    assert kept.released.has("call", "k1")
    assert not kept.released.has("call", "k2")


def test_a_read_that_needs_a_released_call_asks_for_the_history() -> None:
    live = _covered_session()
    kept = _released(_noted(live), 5)
    # A later response to k1 would restore c1 and r1, which retention let go.
    late = [*live, *logged([response_event("r9", "i3", 107.0, "k1")], [6])]
    noted = _noted(late, kept, len(live))
    with pytest.raises(NeedsHistory) as raised:
        view_events(noted)
    assert "'k1'" in raised.value.what
