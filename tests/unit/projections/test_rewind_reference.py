"""Rewinds (reference §3.1), case by case from the reference text.

Expected values are worked out by hand from the reference.
"""

from __future__ import annotations

from projections.compaction.masking import (
    mask_compacted,
)
from projections.fold.rewind import drop_rewound
from schemas.event import Event
from tests.support.events import (
    bare_event,
    ids,
    rewind_event,
    summary_event,
    text_event,
)


def _labels(events: list[Event]) -> list[str]:
    return [f"S:{e.id}" if e.actions.compaction is not None else e.id for e in events]


# --------------------------------------------------------------------------- §3.1 rewind


def test_rewind_drops_target_span_and_itself() -> None:
    events = [
        text_event("a1", "a", 1),
        text_event("b1", "b", 2),
        text_event("b2", "b", 3),
        rewind_event("r", "b", 4),
        text_event("c1", "c", 5),
    ]
    assert ids(drop_rewound(events)) == ["a1", "c1"]


def test_rewind_to_unknown_or_later_invocation_drops_only_the_rewind() -> None:
    unknown = [text_event("a1", "a", 1), rewind_event("r", "zzz", 2), text_event("a2", "a", 3)]
    assert ids(drop_rewound(unknown)) == ["a1", "a2"]
    later = [text_event("a1", "a", 1), rewind_event("r", "b", 2), text_event("b1", "b", 3)]
    assert ids(drop_rewound(later)) == ["a1", "b1"]


def test_rewind_to_its_own_invocation_drops_only_itself() -> None:
    # The target's first index (the rewind itself) is not strictly smaller.
    own = bare_event("r", "x", 2, actions={"rewind_before_invocation_id": "x"})
    events = [text_event("a1", "a", 1), own, text_event("a2", "a", 3)]
    assert ids(drop_rewound(events)) == ["a1", "a2"]


def test_rewind_inside_an_annulled_span_has_no_effect() -> None:
    # R1 (to a) sits inside the span R2 (to b) annuls, so a1 survives.
    events = [
        text_event("a1", "a", 1),
        text_event("b1", "b", 2),
        rewind_event("r1", "a", 3),
        text_event("c1", "c", 4),
        rewind_event("r2", "b", 5),
        text_event("d1", "d", 6),
    ]
    assert ids(drop_rewound(events)) == ["a1", "d1"]


def test_rewound_summary_vanishes_and_its_raw_events_reappear() -> None:
    events = [
        text_event("e1", "inv1", 100),
        text_event("e2", "inv1", 101, author="agent"),
        text_event("e3", "inv2", 102),
        summary_event("s", 100, 101, 103),
        rewind_event("r", "inv2", 104),
        text_event("e4", "inv3", 105),
    ]
    assert _labels(mask_compacted(events[:4], "")) == ["S:s", "e3"]
    live = drop_rewound(events)
    assert ids(live) == ["e1", "e2", "e4"]
    assert _labels(mask_compacted(live, "")) == ["e1", "e2", "e4"]
