"""Sliding-window compaction after an invocation (reference §4). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Sequence

from projections.compaction.config import CompactionConfig
from projections.compaction.obligations import self_contained_prefix
from projections.compaction.size_gate import EventSizes, passes_size_gate
from projections.compaction.window import CompactionWindow
from projections.event_kinds import is_summary
from projections.fold.rewind import drop_rewound
from schemas.event import Event


def previous_sliding_end(live: Sequence[Event]) -> float:
    """End of the most recently appended summary whose end is non-zero, else ``0.0``.

    Deliberate ADK quirks (reference §14.2, §14.3): this is the last summary
    in stream order, not the widest or the latest survivor, and an end of
    exactly ``0.0`` counts as absent.
    """
    for event in reversed(live):
        compaction = event.actions.compaction
        if compaction is not None and compaction.end_timestamp:
            return compaction.end_timestamp
    return 0.0


def select_sliding_window(
    events: Sequence[Event], config: CompactionConfig, *, sizes: EventSizes | None = None
) -> CompactionWindow | None:
    """The sliding window after an invocation, or None if it does not fire.

    Works on the live (rewinds dropped), unscoped events L. An invocation is
    *new* when its latest raw event is newer than :func:`previous_sliding_end`
    (an invocation whose latest timestamp is 0.0 never is). With at least
    ``compaction_interval`` new invocations, the window runs from the first
    event of the invocation ``overlap_size`` places before the first new one
    (invocations in order of first appearance, clamped to the first) to the
    last event of the last new one, summaries left out; it is then cut to its
    longest self-contained prefix and must pass the size gate.

    Example (§4.1), compaction_interval=2, overlap_size=1, no summary yet:
        inv1 (100, 101), inv2 (102, 103)           -> window inv1..inv2 [100, 103]
        + summary S1 [100, 103], inv3 (105, 106)   -> one new invocation: None
        + inv4 (107, 108)                          -> window inv2..inv4 [102, 108]
    The new summary does not contain S1, so both survive and both are shown.

    Args:
        events: The whole session, stream order.
        config: The app's compaction config.
        sizes: Per-event sizes for the size gate
            (:func:`~projections.compaction.size_gate.worth_compacting`); None runs the
            reference gate, which serializes the live events.

    Returns:
        The window to summarize, or None.
    """
    if config.compaction_interval is None or config.overlap_size is None:
        return None
    live = [event for event in drop_rewound(events) if event.isolation_scope is None]
    if not live:
        return None
    previous_end = previous_sliding_end(live)
    latest: dict[str, float] = {}  # insertion order = order of first appearance
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for position, event in enumerate(live):
        invocation = event.invocation_id
        # The slice bounds are the first/last event of any kind with that
        # invocation id (reference §4 step 7, literal): a summary event that
        # shares a raw invocation's id stretches the slice. Only raw events
        # make an invocation and its latest timestamp (step 3).
        first.setdefault(invocation, position)
        last[invocation] = position
        if not invocation or is_summary(event):
            continue
        latest[invocation] = max(latest.get(invocation, 0.0), event.timestamp)
    order = list(latest)
    new = [i for i, invocation in enumerate(order) if latest[invocation] > previous_end]
    if len(new) < config.compaction_interval:
        return None
    start_invocation = order[max(0, new[0] - config.overlap_size)]
    end_invocation = order[new[-1]]
    span = live[first[start_invocation] : last[end_invocation] + 1]
    window = self_contained_prefix([e for e in span if not is_summary(e)], live)
    if not window or not passes_size_gate(live, window, sizes):
        return None
    return CompactionWindow.of("sliding_window", tuple(window), seed=None)
