"""Hand-written sessions for the live view's tests: events named by position, and the check.

An event's id is ``e<position>``, so a test lists the positions it expects kept. Texts are
long enough that ADK finds every window worth summarizing (its ``_is_range_worth_compacting``
compares a window's size with the last summary's), so a window a reader would take shows.
:func:`assert_kept` checks a selection twice: the kept positions the test worked out by
hand from the rules (projections/live_view/README.md), and every ADK reader's answer on
them equal to its answer on the whole session (tests/support/live_view_oracle.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.live_view.selection import select_live
from schemas.event import Event
from tests.support.events import summary_event, text_event
from tests.support.live_view_oracle import assert_answers_alike

#: Enough words that removing a message saves more than a summary costs.
LONG = " ".join(["word"] * 80)


def said(
    position: int, invocation: str, timestamp: float, author: str = "user", **more: object
) -> Event:
    """A long text by `author` (a user message, or an agent's reply), id ``e<position>``."""
    return text_event(
        f"e{position}", invocation, timestamp, f"{author} {position}: {LONG}", author=author, **more
    )


def exchange(
    position: int, invocation: str, timestamp: float, author: str = "root", **more: Any
) -> list[Event]:
    """A user message at `timestamp` and `author`'s reply one second later (ids from `position`)."""
    return [
        said(position, invocation, timestamp, **more),
        said(position + 1, invocation, timestamp + 1.0, author, **more),
    ]


def summary(position: int, start: float, end: float, timestamp: float, **more: object) -> Event:
    """A summary of [`start`, `end`] as ADK appends it (author user), id ``e<position>``."""
    return summary_event(f"e{position}", start, end, timestamp, f"summary {position}", **more)


def assert_kept(events: Sequence[Event], overlap: int, kept: Sequence[int]) -> None:
    """`select_live` keeps exactly `kept`, and ADK's readers answer on them as on all."""
    view = select_live(events, overlap)
    assert list(view.kept) == list(kept), view
    assert_answers_alike(events, view.kept, overlap, view)
