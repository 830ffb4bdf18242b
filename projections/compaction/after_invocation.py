"""Which compaction runs after an invocation (reference §6). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Sequence

from projections.compaction.config import CompactionConfig
from projections.compaction.size_gate import EventSizes
from projections.compaction.sliding_window import select_sliding_window
from projections.compaction.token_threshold import (
    POST_INVOCATION,
    ObservedCount,
    select_token_threshold_window,
)
from projections.compaction.window import CompactionWindow
from projections.fold.rewind import drop_rewound
from schemas.event import Event

__all__ = ["CompactionWindow", "select_post_invocation_window"]


def select_post_invocation_window(
    events: Sequence[Event],
    config: CompactionConfig,
    *,
    seed_invocation_id: str = "seed",
    skip_token_threshold: bool = False,
    sizes: EventSizes | None = None,
    observed: ObservedCount | None = None,
) -> CompactionWindow | None:
    """The window the runner's post-invocation hook summarizes, or None.

    Token threshold has precedence: when its pair is configured and it picks
    a window, the sliding window does not run in the same pass. ADK falls
    back to the sliding window only when the token path produced no summary:
    if the summarizer returns nothing for a token window, call again with
    ``skip_token_threshold=True`` to get the sliding window.

    Args:
        events: The whole session, stream order.
        config: The app's compaction config.
        seed_invocation_id: Fresh invocation id for a token-threshold seed.
        skip_token_threshold: Skip the token trigger (it already ran and its
            summarizer returned nothing).
        sizes: Per-event sizes for the size gate
            (:func:`~projections.compaction.size_gate.worth_compacting`); None runs the
            reference gate, which serializes the live events.
        observed: The token trigger's prompt-token count, read by the caller;
            None reads it from `events`.
    """
    live = [event for event in drop_rewound(events) if event.isolation_scope is None]
    if not live:
        return None
    if config.has_token_threshold and not skip_token_threshold:
        window = select_token_threshold_window(
            events,
            config,
            POST_INVOCATION,
            seed_invocation_id=seed_invocation_id,
            sizes=sizes,
            observed=observed,
        )
        if window is not None:
            return window
    if config.has_sliding_window:
        return select_sliding_window(events, config, sizes=sizes)
    return None
