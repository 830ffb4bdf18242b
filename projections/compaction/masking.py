"""Which summaries survive and what they hide (reference §3.2, §3.3). Pure: no I/O, no clock.

A summary event stands in for the raw events whose timestamps lie in its
``[start_timestamp, end_timestamp]`` range. A summary whose range is contained
in another summary's range is hidden; partially overlapping summaries both
survive. Masking shows each survivor as a model turn at its end timestamp and
removes the raw events inside the union of the surviving ranges.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from projections.event_kinds import is_summary
from schemas.event import Event


def summary_range(event: Event) -> tuple[float, float]:
    """The ``(start_timestamp, end_timestamp)`` of a summary event.

    Raises:
        ValueError: `event` is not a summary event.
    """
    compaction = event.actions.compaction
    if compaction is None:
        raise ValueError(f"event {event.id!r} is not a summary event")
    return compaction.start_timestamp, compaction.end_timestamp


def surviving_summary_positions(events: Sequence[Event]) -> list[int]:
    """Positions in `events` of the summaries not contained in another one.

    A summary is dropped iff another summary's range contains it (``start' <=
    start`` and ``end' >= end``); of identical ranges only the one appended
    last survives. A range with a NaN bound always survives and never hides
    another. Inverted ranges (start > end) take part like any other.

    Example: ranges ``[100, 103]`` at 4, ``[102, 108]`` at 9, ``[100, 108]``
    at 12 -> ``[12]``; without the last one -> ``[4, 9]``.

    Returns:
        Positions in stream order.
    """
    survivors: list[int] = []
    ranged: list[tuple[float, float, int]] = []
    for position, event in enumerate(events):
        if not is_summary(event):
            continue
        start, end = summary_range(event)
        if math.isnan(start) or math.isnan(end):
            survivors.append(position)
        else:
            ranged.append((start, end, position))
    # Start ascending, end descending, position descending: a range is
    # contained in an earlier one of this order iff its end does not exceed
    # the widest end seen so far.
    ranged.sort(key=lambda item: (item[0], -item[1], -item[2]))
    widest_end = -math.inf
    for _start, end, position in ranged:
        if end > widest_end:
            survivors.append(position)
            widest_end = end
    survivors.sort()
    return survivors


def latest_summary(events: Sequence[Event]) -> Event | None:
    """The last surviving summary in stream order, or None when there is none."""
    positions = surviving_summary_positions(events)
    return events[positions[-1]] if positions else None


def latest_summary_end(events: Sequence[Event]) -> float:
    """The end timestamp of :func:`latest_summary`, ``0.0`` when there is none."""
    summary = latest_summary(events)
    return summary_range(summary)[1] if summary is not None else 0.0


#: An event with every field at its default: a shown summary is a copy of it with the
#: fields :func:`materialize_summary` sets. Copying skips the defaults' construction
#: (``model_construct`` builds each default factory's value anew, about 50 µs an
#: event), and frozen models share their default values safely.
_SHOWN_TURN: Final = Event.model_construct(author="model", timestamp=0.0)


def materialize_summary(summary: Event, agent_name: str) -> Event:
    """A summary as the model turn the request shows, placed at its end timestamp.

    The turn is authored by `agent_name` (``"model"`` when empty), its content is
    the compacted content as stored (ADK's summarizer writes role ``model``; a
    summary of another shape is shown as it is, as ADK does); id, branch,
    isolation scope, invocation id and actions are copied from the summary event;
    every other field has its default.

    Built from values the summary already validated, so it is not validated
    again: a summary end that is not finite (ADK's NaN edge cases; the codec
    refuses them, the core keeps ADK's behaviour) stays the turn's timestamp.
    """
    compaction = summary.actions.compaction
    assert compaction is not None  # noqa: S101 - callers filter with is_summary
    return _SHOWN_TURN.model_copy(
        update={
            "id": summary.id,
            "invocation_id": summary.invocation_id,
            "author": agent_name or "model",
            "branch": summary.branch,
            "isolation_scope": summary.isolation_scope,
            "timestamp": compaction.end_timestamp,
            "content": compaction.compacted_content,
            "actions": summary.actions,
        }
    )


class Coverage(NamedTuple):
    """Disjoint closed timestamp intervals, sorted: their starts and their ends."""

    starts: tuple[float, ...] = ()
    ends: tuple[float, ...] = ()


def coverage(ranges: Iterable[tuple[float, float]]) -> Coverage:
    """Union of the non-inverted ranges, merged where they overlap or touch.

    Ranges with a NaN bound cover nothing. Example: ``[1, 3], [3, 5], [7, 6],
    [8, 9]`` -> intervals ``[1, 5]`` and ``[8, 9]``.
    """
    starts: list[float] = []
    ends: list[float] = []
    for start, end in sorted(r for r in ranges if r[0] <= r[1]):  # NaN compares False
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return Coverage(tuple(starts), tuple(ends))


def is_covered(timestamp: float, covered: Coverage) -> bool:
    """Whether `timestamp` lies in one of the intervals of `covered`."""
    slot = bisect.bisect_right(covered.starts, timestamp) - 1  # last interval starting <= ts
    return slot >= 0 and timestamp <= covered.ends[slot]


def mask_compacted(events: Sequence[Event], agent_name: str) -> list[Event]:
    """`events` with surviving summaries shown and the raw events they cover hidden.

    Surviving summaries become model turns at their end timestamp
    (:func:`materialize_summary`); subsumed summaries vanish; a raw event is
    removed iff its timestamp lies in a surviving range (both ends inclusive).
    The result is sorted by (timestamp, original position).

    Deliberate ADK quirk (reference §3.3, §14.1): the sort by timestamp also
    reorders raw events that no summary touches, whenever any summary event is
    in `events`; without one, `events` is returned in stream order.

    Example: ``e1@100 e2@101 S[100,101]@102 e3@103`` -> ``S@101 e3@103``.

    Args:
        events: Already filtered events (rewinds, scope, branch), stream order.
        agent_name: The agent the request is built for.

    Returns:
        The visible items in their final order.
    """
    survivors = surviving_summary_positions(events)
    if not survivors:  # no summary at all: every summary event survives or is contained
        return list(events)
    covered = coverage([summary_range(events[p]) for p in survivors])
    # Summaries first, then raw events, as ADK lists them before sorting: the
    # keys are a total order except for a NaN end, which the stable sort then
    # leaves where this initial order put it.
    items: list[tuple[float, int, Event]] = []
    for position in survivors:
        shown = materialize_summary(events[position], agent_name)
        items.append((shown.timestamp, position, shown))
    for position, event in enumerate(events):
        if not is_summary(event) and not is_covered(event.timestamp, covered):
            items.append((event.timestamp, position, event))
    items.sort(key=lambda item: (item[0], item[1]))
    return [event for _, _, event in items]
