from __future__ import annotations

from projections.fold.rewind import drop_rewound
from tests.support.events import ids, rewind_event, summary_event, text_event


def test_rewind_drops_target_invocation_and_everything_after() -> None:
    events = [
        text_event("a1", "inv1", 1),
        text_event("b1", "inv2", 2),
        text_event("c1", "inv3", 3),
        rewind_event("r", "inv2", 4),
        text_event("d1", "inv4", 5),
    ]
    assert ids(drop_rewound(events)) == ["a1", "d1"]


def test_rewind_to_unknown_invocation_drops_only_itself() -> None:
    events = [
        text_event("a1", "inv1", 1),
        rewind_event("r", "nope", 2),
        text_event("a2", "inv1", 3),
    ]
    assert ids(drop_rewound(events)) == ["a1", "a2"]


def test_rewind_to_invocation_first_seen_later_drops_only_itself() -> None:
    events = [
        text_event("a1", "inv1", 1),
        rewind_event("r", "inv2", 2),
        text_event("b1", "inv2", 3),
    ]
    assert ids(drop_rewound(events)) == ["a1", "b1"]


def test_rewind_inside_rewound_span_has_no_effect() -> None:
    events = [
        text_event("a1", "inv1", 1),
        text_event("b1", "inv2", 2),
        text_event("c1", "inv3", 3),
        rewind_event("r1", "inv1", 4),  # annulled by r2 below, so inv1 comes back
        text_event("d1", "inv4", 5),
        rewind_event("r2", "inv2", 6),
    ]
    assert ids(drop_rewound(events)) == ["a1"]


def test_first_index_is_taken_over_the_whole_input() -> None:
    # inv1 reappears after the rewind target; its first event is still at 0.
    events = [
        text_event("a1", "inv1", 1),
        text_event("b1", "inv2", 2),
        text_event("a2", "inv1", 3),
        rewind_event("r", "inv1", 4),
        text_event("c1", "inv3", 5),
    ]
    assert ids(drop_rewound(events)) == ["c1"]


def test_summary_inside_rewound_span_is_removed() -> None:
    events = [
        text_event("a1", "inv1", 1),
        text_event("b1", "inv2", 2),
        summary_event("s", 1, 2, 3, invocation_id="inv2"),
        rewind_event("r", "inv2", 4),
    ]
    assert ids(drop_rewound(events)) == ["a1"]


# Built before the tests run: each test below is nothing but the call, so it is among the
# first a mutation run tries, and a walk that goes wrong on it fails at once (past the end
# of the list) instead of looping.
_ALONE = [text_event("a1", "inv1", 1)]
_LONE_REWIND = [rewind_event("r", "nope", 2)]


def test_a_single_event_is_kept() -> None:
    assert drop_rewound(_ALONE) == _ALONE


def test_a_lone_rewind_to_an_unknown_invocation_drops_only_itself() -> None:
    assert drop_rewound(_LONE_REWIND) == []
