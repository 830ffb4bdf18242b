"""A session's live view kept between batches: advanced from its own events plus new ones. Pure.

:func:`view_of` selects from a session's whole held list; :func:`next_view` advances a kept
view by a batch's held events from the view's own events alone, and answers None when the
batch may touch what the view dropped (a rewind, an id, invocation or scope a dropped event
has, a summary ending below a dropped event's timestamp, a suffix reaching back past the
view's): the caller then selects from the whole list again. Either way the result is what
:func:`~projections.live_view.selection.select_live` gives on the whole list. Design:
projections/live_view/README.md, "Serving".

Example: a view keeping offsets 7..9 of ``0..9`` and a batch ``10, 11`` of a new invocation
-> ``select_live`` over ``7..11`` only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, field
from typing import Final

from pyrsistent import PSet, pset

from projections.history.event_status import EventStatus
from projections.history.rewind_marks import rewind_marks
from projections.live_view import event_facts as facts
from projections.live_view.selection import select_live
from projections.live_view.windows import sliding_shortfall
from schemas.event import Event

#: A held event at its offset.
HeldEvent = tuple[int, Event]
#: The statuses of the records ADK holds in ``session.events``: what the fold applied as an
#: event, rewound ones and rewinds included. Every other status (bookkeeping, a copy, a
#: partial or stale record, a creation, an ended incarnation's) is left out.
HELD: Final = frozenset(
    {
        EventStatus.LIVE,
        EventStatus.MASKED,
        EventStatus.SUPERSEDED,
        EventStatus.REWOUND,
        EventStatus.REWIND,
    }
)


@dataclass(frozen=True, slots=True)
class Dropped:
    """What the events a view dropped could still interact with.

    Attributes:
        ids: Every call id they name.
        invocations: Their invocation ids.
        scopes: Their isolation scopes.
        latest: Their greatest timestamp (-inf: none dropped).
    """

    ids: PSet[str] = field(default_factory=pset)
    invocations: PSet[str] = field(default_factory=pset)
    scopes: PSet[str | None] = field(default_factory=pset)
    latest: float = float("-inf")

    def adding(self, events: Iterable[Event]) -> Dropped:
        """These facts with those of `events` added."""
        ids, invocations, scopes = (
            self.ids.evolver(),
            self.invocations.evolver(),
            self.scopes.evolver(),
        )
        latest = self.latest
        for event in events:
            for call_id in facts.named_ids(event):
                ids.add(call_id)
            invocations.add(event.invocation_id)
            scopes.add(event.isolation_scope)
            latest = max(latest, event.timestamp)
        return Dropped(ids.persistent(), invocations.persistent(), scopes.persistent(), latest)

    def touched_by(self, event: Event, kept_scopes: Set[str | None]) -> bool:
        """Whether the new `event` may change what a dropped event means to a reader.

        `kept_scopes`: the isolation scopes of the view's kept events.
        """
        compaction = event.actions.compaction
        return bool(
            event.actions.rewind_before_invocation_id
            or not self.ids.isdisjoint(facts.named_ids(event))
            or event.invocation_id in self.invocations
            or (event.isolation_scope in self.scopes and event.isolation_scope not in kept_scopes)
            or (event.isolation_scope is not None and event.isolation_scope in self.ids)
            or (compaction is not None and compaction.end_timestamp < self.latest)
        )


@dataclass(frozen=True, slots=True)
class KeptView:
    """A session's live view, with what the sink needs to advance it.

    Attributes:
        live_from: The offset the kept suffix starts at (past the last row when empty).
        kept: The kept held events, rising offsets (the suffix included).
        dropped: The facts of the held events not kept.
    """

    live_from: int
    kept: tuple[HeldEvent, ...]
    dropped: Dropped

    @property
    def extra(self) -> tuple[int, ...]:
        """The kept offsets before the suffix."""
        return tuple(offset for offset, _ in self.kept if offset < self.live_from)


def view_of(held: Sequence[HeldEvent], overlap_size: int, end: int) -> KeptView:
    """The view of a session whose held events are `held` (all of them); `end`: past its rows."""
    return _selected(held, overlap_size, end, Dropped())


def batch_view(
    view: KeptView | None,
    batch: Sequence[tuple[int, Event, str]],
    overlap_size: int,
    end: int,
) -> KeptView | None:
    """The view after a batch of one session's records (offset, event, final status), rising.

    `view` is the view before the batch (None: unknown). None: the view must be selected
    from the session's whole held list (:func:`view_of`).
    """
    deletions = [n for n, (_, _, status) in enumerate(batch) if status == EventStatus.DELETION]
    since = deletions[-1] + 1 if deletions else 0
    held = [(offset, event) for offset, event, status in batch[since:] if status in HELD]
    if deletions:
        return view_of(held, overlap_size, end)
    if view is None:
        return None
    return next_view(view, held, overlap_size, end)


def next_view(
    view: KeptView, batch: Sequence[HeldEvent], overlap_size: int, end: int
) -> KeptView | None:
    """`view` advanced by the batch's `batch` held events; None when the whole list is needed.

    `batch` must follow every event of `view` (higher offsets) and the batch must hold no
    deletion (after one, :func:`view_of` of the batch's held events is the view).
    """
    if not batch:
        return view
    scopes = {event.isolation_scope for _, event in view.kept}
    if any(view.dropped.touched_by(event, scopes) for _, event in batch):
        return None
    held = [*view.kept, *batch]
    if view.dropped.latest > float("-inf") and _short(held, overlap_size):
        return None
    result = _selected(held, overlap_size, end, view.dropped)
    return result if result.live_from >= view.live_from else None


def _short(held: Sequence[HeldEvent], overlap_size: int) -> bool:
    """Whether the sliding window over `held` reaches back past its first invocation."""
    events = [event for _, event in held]
    marks = rewind_marks(
        [event.invocation_id for event in events],
        [event.actions.rewind_before_invocation_id for event in events],
    )
    return sliding_shortfall(events, [mark is None for mark in marks], overlap_size) > 0


def _selected(held: Sequence[HeldEvent], overlap_size: int, end: int, dropped: Dropped) -> KeptView:
    selection = select_live([event for _, event in held], overlap_size)
    start = held[selection.suffix_start][0] if selection.suffix_start < len(held) else end
    kept_positions = set(selection.kept)
    kept = tuple(held[p] for p in selection.kept)
    gone = [event for p, (_, event) in enumerate(held) if p not in kept_positions]
    return KeptView(start, kept, dropped.adding(gone) if gone else dropped)
