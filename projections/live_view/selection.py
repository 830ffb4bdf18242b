"""The live view of a session: which of its events ADK's readers still need. Pure.

:func:`select_live` takes a session's events as ADK holds them (every stored
event, rewound ones and rewinds included, stream order) and the sliding
window's ``overlap_size``, and returns the positions the live view keeps: a
contiguous suffix from ``suffix_start`` plus a few earlier events (summaries,
events no summary hides from every reader, the router's replies, calls a kept
event names, open calls, task inputs). On the kept events ADK's
``_get_contents`` (both ``include_contents``), its router and both compaction
selections answer as on the whole list. The rules and why they suffice:
projections/live_view/README.md. Cost O(n + named ids).

Example: ``u1 a1 S[u1,a1] u2 a2`` with overlap 0 -> suffix from ``S``; ``u1``
and ``a1`` are hidden by ``S`` and dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.history.rewind_marks import rewind_marks
from projections.live_view import event_facts as facts
from projections.live_view.hiding import Hiding
from projections.live_view.windows import scope_tail, sliding_anchor, turn_anchors
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class LiveView:
    """The positions a session's live view keeps.

    Attributes:
        suffix_start: Every position from here on is kept (``n``: none).
        kept: Every kept position, rising (the suffix included).
    """

    suffix_start: int
    kept: tuple[int, ...]

    @property
    def extra(self) -> tuple[int, ...]:
        """The kept positions before the suffix."""
        return tuple(p for p in self.kept if p < self.suffix_start)


def select_live(events: Sequence[Event], overlap_size: int) -> LiveView:
    """The live view of `events` (a session as ADK holds it) for `overlap_size`.

    Raises:
        ValueError: `overlap_size` is negative.
    """
    if overlap_size < 0:
        raise ValueError(f"overlap_size: {overlap_size}, expected 0 or more")
    n = len(events)
    marks = rewind_marks(
        [event.invocation_id for event in events],
        [event.actions.rewind_before_invocation_id for event in events],
    )
    live = [mark is None for mark in marks]
    start = min([n, *_suffix_bounds(events, live, overlap_size)])
    while True:
        kept, lower = _kept(events, live, start)
        if lower >= start:
            return LiveView(start, tuple(sorted(kept)))
        start = lower


def _suffix_bounds(events: Sequence[Event], live: Sequence[bool], overlap: int) -> list[int]:
    """Positions the suffix must reach back to, whatever the earlier events are."""
    bounds = [*turn_anchors(events)]
    bounds += [p for p in [sliding_anchor(events, live, overlap)] if p is not None]
    for scope in {event.isolation_scope for event in events}:
        bounds += scope_tail(events, live, scope)
    return bounds


def _kept(events: Sequence[Event], live: Sequence[bool], start: int) -> tuple[set[int], int]:
    """The positions kept with the suffix at `start`, and how far back the suffix must go.

    The second value is below `start` when a rewind in the suffix reaches back,
    or a needed event is one rewinds annul (it cannot be kept alone).
    """
    n = len(events)
    lower = start
    first: dict[str, int] = {}
    for position, event in enumerate(events):
        if event.invocation_id:
            first.setdefault(event.invocation_id, position)
    for position in range(start, n):
        target = events[position].actions.rewind_before_invocation_id
        if target and first.get(target, position) < position:
            lower = min(lower, first[target])
    kept = set(range(start, n))
    earlier = [p for p in range(start) if live[p]]
    kept |= _unhidden(events, live, earlier)
    kept |= _router_replies(events, live)
    answered = {i for p, event in enumerate(events) if live[p] for i in facts.response_ids(event)}
    kept |= {p for p in earlier if facts.call_ids(events[p]) - answered}
    needed, reach = _task_inputs(events, live, start)
    kept |= needed
    lower = min(lower, reach)
    closure, reach = _id_closure(events, live, start, kept)
    return kept | closure, min(lower, reach)


def _unhidden(events: Sequence[Event], live: Sequence[bool], earlier: Sequence[int]) -> set[int]:
    """Of the live `earlier` positions, those no summary hides (subsumes) for every reader."""
    hiding = Hiding(events, [p for p in range(len(events)) if live[p]])
    kept: set[int] = set()
    for position in earlier:
        event = events[position]
        if event.actions.compaction is not None:
            if not hiding.subsumes(event, position):
                kept.add(position)
        elif not hiding.hides(event):
            kept.add(position)
    return kept


def _router_replies(events: Sequence[Event], live: Sequence[bool]) -> set[int]:
    """The newest agent event, and per (author, transfer target) its newest reply."""
    kept: set[int] = set()
    latest: dict[tuple[str, str | None], int] = {}
    newest_agent = None
    for position, event in enumerate(events):
        if not live[position]:
            continue
        if event.author != facts.USER:
            newest_agent = position
        if facts.is_agent_reply(event):
            latest[(event.author, event.actions.transfer_to_agent)] = position
    kept |= set(latest.values())
    if newest_agent is not None:
        kept.add(newest_agent)
    return kept


def _task_inputs(events: Sequence[Event], live: Sequence[bool], start: int) -> tuple[set[int], int]:
    """The first call with arguments of each scope and open call id, and the reach back.

    A task agent scoped by a call id reads that call's arguments from the
    first event (rewound or not) that carries it.
    """
    scopes = {event.isolation_scope for event in events if event.isolation_scope}
    answered = {i for p, event in enumerate(events) if live[p] for i in facts.response_ids(event)}
    opened = {i for event in events for i in facts.call_ids(event)}
    wanted = scopes | (opened - answered)
    kept: set[int] = set()
    reach = start
    for position, event in enumerate(events):
        found = facts.task_call_ids(event) & wanted
        if not found:
            continue
        wanted -= found
        if position < start:
            if live[position]:
                kept.add(position)
            else:
                reach = min(reach, position)
    return kept, reach


def _id_closure(
    events: Sequence[Event], live: Sequence[bool], start: int, kept: set[int]
) -> tuple[set[int], int]:
    """Earlier events naming an id a kept event names, transitively, and the reach back.

    A rewound event that calls such an id cannot be kept alone: the suffix
    must reach back to it.
    """
    naming: dict[str, list[int]] = {}
    for position in range(start):
        for call_id in facts.named_ids(events[position]):
            naming.setdefault(call_id, []).append(position)
    pending = [i for p in kept for i in facts.named_ids(events[p])]
    seen: set[str] = set()
    added: set[int] = set()
    reach = start
    while pending:
        call_id = pending.pop()
        if call_id in seen:
            continue
        seen.add(call_id)
        for position in naming.get(call_id, ()):
            if not live[position]:
                if call_id in facts.call_ids(events[position]):
                    reach = min(reach, position)
                continue
            if position not in kept and position not in added:
                added.add(position)
                pending.extend(facts.named_ids(events[position]))
    return added, reach
