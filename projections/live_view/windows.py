"""How far back the live view's suffix must reach for each reader that reads a tail. Pure.

Three ADK 2.13.0 readers read a contiguous tail of the session, so the live
view keeps that tail whole: the current turn of ``include_contents="none"``
(from the newest user message that starts a turn for every reader of a scope),
the sliding window (from the first invocation ``overlap_size`` places before the
first new one, or the next one), and per isolation scope the token-threshold
selection (its candidates after the newest surviving summary's end, the walk
back to the newest summary for a recorded prompt count, the newest invocation).
Each function returns positions the suffix must start at or before.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.live_view import event_facts as facts
from schemas.event import Event


def turn_anchors(events: Sequence[Event]) -> list[int]:
    """Per isolation scope, where every reader's current turn starts at the latest.

    Walks back as ``_get_current_turn_contents`` does, over every event
    (rewound ones too): posted-back tool results owe their calls, and a turn
    starts only where nothing is owed. A scope without such a start needs all
    of its events.
    """
    recorded = {call_id for event in events for call_id in facts.call_ids(event)}
    owed: set[str] = set()
    anchors: dict[str | None, int] = {}
    for position in reversed(range(len(events))):
        event = events[position]
        owed -= facts.call_ids(event)
        if event.author == facts.USER and facts.response_ids(event):
            owed |= facts.response_ids(event) & recorded
        if not owed and facts.is_turn_start(event):
            anchors.setdefault(event.isolation_scope, position)
    bounds = list(anchors.values())
    for position, event in enumerate(events):
        if event.isolation_scope not in anchors:
            anchors[event.isolation_scope] = position
            bounds.append(position)
    return bounds


def sliding_anchor(events: Sequence[Event], live: Sequence[bool], overlap: int) -> int | None:
    """The first event of the invocation the next sliding window starts with, if any.

    Over the live unscoped events: the invocations new since the newest summary
    with a non-zero end; the window starts `overlap` invocations before the
    first new one, or before the next invocation when none is new yet.
    """
    order, first, begin = _sliding_window(events, live, overlap)
    begin = max(0, begin)
    return first[order[begin]] if begin < len(order) else None


def sliding_shortfall(events: Sequence[Event], live: Sequence[bool], overlap: int) -> int:
    """How many invocations the next sliding window reaches back before the first `events` hold.

    0 when the window starts at one of them; a list that lacks a session's
    earliest invocations cannot say where such a window starts.
    """
    return max(0, -_sliding_window(events, live, overlap)[2])


def _sliding_window(
    events: Sequence[Event], live: Sequence[bool], overlap: int
) -> tuple[list[str], dict[str, int], int]:
    """The live unscoped invocations in order, their first positions, the window's index.

    The index is not clamped: below 0 when the window reaches back past the first.
    """
    unscoped = [p for p in range(len(events)) if live[p] and events[p].isolation_scope is None]
    last_end = 0.0
    for position in reversed(unscoped):
        compaction = events[position].actions.compaction
        if compaction is not None and compaction.end_timestamp:
            last_end = compaction.end_timestamp
            break
    latest: dict[str, float] = {}
    first: dict[str, int] = {}
    for position in unscoped:
        event = events[position]
        if event.invocation_id and event.actions.compaction is None:
            latest[event.invocation_id] = max(latest.get(event.invocation_id, 0.0), event.timestamp)
            first.setdefault(event.invocation_id, position)
    order = list(latest)
    new = [index for index, invocation in enumerate(order) if latest[invocation] > last_end]
    first_new = new[0] if new else len(order)
    return order, first, first_new - overlap


def scope_tail(events: Sequence[Event], live: Sequence[bool], scope: str | None) -> list[int]:
    """Where the token-threshold selection of `scope` starts reading, at the latest.

    The newest summary (and the newest with a non-zero end, which the sliding
    window reads), every candidate (after the newest surviving summary's end),
    every event after the newest summary (the recorded prompt count), and the
    newest invocation; without a summary, every event of the scope.
    """
    own = [p for p in range(len(events)) if live[p] and events[p].isolation_scope == scope]
    summaries = [p for p in own if events[p].actions.compaction is not None]
    raw = [p for p in own if events[p].actions.compaction is None]
    if not summaries:
        return own[:1]
    bounds = [summaries[-1]]
    bounds += [p for p in summaries if _end(events[p])][-1:]
    end = _latest_surviving_end(events, summaries)
    bounds += [p for p in raw if events[p].timestamp > end][:1]
    bounds += [p for p in raw if events[p].invocation_id][-1:]
    return bounds


def _latest_surviving_end(events: Sequence[Event], summaries: Sequence[int]) -> float:
    """The end of the newest summary (stream order) no other summary contains, as ADK picks it."""
    ranges = []
    for position in summaries:
        compaction = events[position].actions.compaction
        if compaction is not None:
            ranges.append((compaction.start_timestamp, -compaction.end_timestamp, -position))
    retained: list[tuple[int, float]] = []
    max_end: float | None = None
    for _, negative_end, negative_position in sorted(ranges):
        if max_end is None or -negative_end > max_end:
            retained.append((-negative_position, -negative_end))
            max_end = -negative_end
    return max(retained)[1]


def _end(event: Event) -> float:
    """A summary's end timestamp (0.0 for an event that is none)."""
    return event.actions.compaction.end_timestamp if event.actions.compaction else 0.0
