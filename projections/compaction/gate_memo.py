"""Proofs that no compaction window can pass the size gate yet. Pure: no I/O, no clock.

Once a trigger is armed, ADK selects a window at every later hook, O(history)
each time, even when none is worth compacting. A :class:`GateBound` remembers
why none can pass instead: every window the trigger can still choose starts at
or after a *floor* timestamp, and ``removable(floor, +inf)`` stays within the
previous summary's size by a *budget*. Each appended unscoped event spends its
own size; a summary or a rewind drops the memo. So an armed but quiet trigger
costs O(1) per event. Why each case is exact, and each trigger's floor:
projections/README.md, "Keeping a decision cheap".

Example: ``compaction_interval=2``, invocations of state-only events, no
summary. Every window removes ``0 - 27`` characters, the bar is 0, so both
bounds hold with a budget of 27 until more than 27 characters of content arrive.
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from dataclasses import dataclass

from projections.compaction.config import CompactionConfig
from projections.compaction.masking import summary_range, surviving_summary_positions
from projections.compaction.size_gate import EventSizes, previous_summary_size, removable_size
from projections.compaction.sliding_window import previous_sliding_end
from projections.event_kinds import is_rewind, is_summary
from projections.fold.invocations import InvocationCounts
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class GateBound:
    """No window of one trigger can pass the size gate while this holds.

    Attributes:
        floor: Every window the trigger can choose starts at or after this
            timestamp.
        budget: Characters of content that may still be appended before a
            window could pass (never negative: a bound that runs out is dropped).
    """

    floor: float
    budget: int


@dataclass(frozen=True, slots=True)
class GateMemo:
    """What a projection remembers about windows found not worth compacting.

    Attributes:
        token: The bound for token-threshold windows, None when none holds.
        sliding: The bound for sliding-window windows, None when none holds.
        overlap_size: The ``overlap_size`` the sliding bound was computed for.
    """

    token: GateBound | None
    sliding: GateBound | None
    overlap_size: int | None


def gate_memo(
    live: Sequence[Event], sizes: EventSizes, config: CompactionConfig
) -> GateMemo | None:
    """The bounds that hold for the session whose unscoped live events are `live`.

    O(live events). Only the configured triggers get a bound; None when
    neither holds.

    Args:
        live: The live (rewinds applied) unscoped events, stream order: what
            both triggers read after an invocation.
        sizes: What each event of `live` adds to a request.
        config: The app's compaction config.
    """
    survivors = surviving_summary_positions(live)
    bar = previous_summary_size(live, sizes, survivors)
    token = None
    if config.has_token_threshold:
        token = _bound(live, _token_floor(live, survivors), bar, sizes)
    sliding = None
    if config.overlap_size is not None and config.has_sliding_window:
        sliding = _bound(live, _sliding_floor(live, config.overlap_size), bar, sizes)
    if token is None and sliding is None:
        return None
    return GateMemo(token, sliding, config.overlap_size)


def _bound(
    live: Sequence[Event], floor: float | None, bar: int, sizes: EventSizes
) -> GateBound | None:
    if floor is None:
        return None
    budget = bar - removable_size(live, floor, math.inf, sizes)
    return GateBound(floor, budget) if budget >= 0 else None


def _token_floor(live: Sequence[Event], survivors: list[int]) -> float | None:
    """Lowest start of a token window: candidates follow the latest summary, the seed its start."""
    if not survivors:
        return 0.0  # candidates are the raw events after 0.0
    start, end = summary_range(live[survivors[-1]])
    if math.isnan(start) or math.isnan(end):
        return None
    return min(start, end)


def _sliding_floor(live: Sequence[Event], overlap_size: int) -> float | None:
    """Lowest timestamp of the raw events a sliding window can still reach, None if NaN.

    Mirrors :func:`~projections.compaction.sliding_window.select_sliding_window`: the
    first new invocation (or the next one to come, when none is new), the
    invocation `overlap_size` places before it, and the lowest first position
    of that one and every later one.
    """
    previous_end = previous_sliding_end(live)
    latest: dict[str, float] = {}  # insertion order = order of first appearance
    first: dict[str, int] = {}
    for position, event in enumerate(live):
        invocation = event.invocation_id
        first.setdefault(invocation, position)
        if not invocation or is_summary(event):
            continue
        latest[invocation] = max(latest.get(invocation, 0.0), event.timestamp)
    order = list(latest)
    first_new = next(
        (index for index, invocation in enumerate(order) if latest[invocation] > previous_end),
        len(order),
    )
    reachable = order[max(0, first_new - overlap_size) :]
    start = min((first[invocation] for invocation in reachable), default=len(live))
    floor = math.inf
    for event in live[start:]:
        if is_summary(event):
            continue
        if math.isnan(event.timestamp):
            return None
        floor = min(floor, event.timestamp)
    return floor


def after_live_event(
    memo: GateMemo | None,
    event: Event,
    size: int,
    before: InvocationCounts,
    after: InvocationCounts,
    seen_invocations: Container[str],
) -> GateMemo | None:
    """`memo` after `event` joined the live events. O(1).

    Args:
        memo: The memo before the event.
        event: The event appended to the live list.
        size: What `event` adds to a request.
        before: The invocation counts before the event.
        after: The invocation counts after it.
        seen_invocations: Every invocation id the log held before the event.
    """
    if memo is None:
        return None
    if is_summary(event) or is_rewind(event):
        return None
    if event.isolation_scope is not None:
        return memo
    timestamp = event.timestamp
    token = memo.token
    if token is not None and not timestamp < token.floor:  # below the floor: never reached
        token = _spent(token, size)
    sliding = memo.sliding
    if sliding is not None:
        if not timestamp >= sliding.floor or _moves_start(  # NaN: not above the floor
            event.invocation_id, before, after, seen_invocations
        ):
            sliding = None
        else:
            sliding = _spent(sliding, size)
    if token is None and sliding is None:
        return None
    if token is memo.token and sliding is memo.sliding:
        return memo
    return GateMemo(token, sliding, memo.overlap_size)


def _spent(bound: GateBound, size: int) -> GateBound | None:
    if not size:
        return bound
    budget = bound.budget - size
    return GateBound(bound.floor, budget) if budget >= 0 else None


def _moves_start(
    invocation: str,
    before: InvocationCounts,
    after: InvocationCounts,
    seen_invocations: Container[str],
) -> bool:
    """Whether an event of `invocation` may move a sliding window's start earlier."""
    if not invocation:
        return False  # not an invocation
    if not before.knows(invocation):
        # A new invocation comes after the others, unless the log already
        # holds its id (a summary's, a scoped or a rewound event's) earlier.
        return invocation in seen_invocations
    # An old invocation that becomes new again may come before the first new one.
    return invocation not in before.new_invocations and invocation in after.new_invocations
