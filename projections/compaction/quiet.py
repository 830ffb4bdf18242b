"""O(1) facts that keep a compaction trigger's selection off the hot path. Pure: no I/O.

A selection reads the live list (O(history) without a tail). Before running
one, the decision asks whether the trigger can fire at all: fewer new
invocations than ``compaction_interval``, or a recorded prompt-token count
below ``token_threshold``, rule it out; so does the projection's gate memo
(:mod:`projections.compaction.gate_memo`), which proves that no window can
pass the size gate yet. After a selection that found nothing, the memo is
recomputed (:func:`remembered`). The decisions are exactly those of selecting
every time (``use_memo=False``; a property holds the two equal).

Example: ``compaction_interval=3``, two new invocations, no token trigger ->
:func:`quiet_after_invocation` is True and nothing is selected.
"""

from __future__ import annotations

from dataclasses import replace

from projections.compaction.config import CompactionConfig
from projections.compaction.gate_memo import gate_memo
from projections.fold.projection import SessionProjection, live_event_sizes, live_events


def hook_may_fire(before: SessionProjection, config: CompactionConfig) -> bool:
    """The pre-check of the post-invocation hook: O(1).

    The token trigger may fire when the count it reads is at the threshold,
    or when no count was recorded since the newest summary (it then reads
    the characters/4 estimate, reference §3.6).
    """
    interval, threshold = config.compaction_interval, config.token_threshold
    sliding = (
        config.has_sliding_window
        and interval is not None
        and before.invocations.since_compaction >= interval
    )
    last = before.tokens.last_prompt_tokens
    token = (
        config.has_token_threshold and threshold is not None and (last is None or last >= threshold)
    )
    return sliding or token


def quiet_after_invocation(before: SessionProjection, config: CompactionConfig) -> bool:
    """Whether the post-invocation hook on `before` selects nothing, from O(1) facts.

    Token threshold: a recorded prompt-token count below the threshold (the
    count the trigger reads is the recorded one whenever there is one), or
    the memo's token bound. Sliding window: fewer new invocations than the
    interval, or the memo's sliding bound (computed for this overlap).
    """
    memo = before.gate_memo
    token_quiet = True
    if config.has_token_threshold and config.token_threshold is not None:
        last = before.tokens.last_prompt_tokens
        token_quiet = (last is not None and last < config.token_threshold) or (
            memo is not None and memo.token is not None
        )
    sliding_quiet = True
    if config.has_sliding_window and config.compaction_interval is not None:
        sliding_quiet = before.invocations.since_compaction < config.compaction_interval or (
            memo is not None
            and memo.sliding is not None
            and memo.overlap_size == config.overlap_size
        )
    return token_quiet and sliding_quiet


def quiet_token_check(projection: SessionProjection) -> bool:
    """Whether a token check on `projection` selects nothing: the memo's token bound holds."""
    memo = projection.gate_memo
    return memo is not None and memo.token is not None


def remembered(projection: SessionProjection, config: CompactionConfig) -> SessionProjection:
    """`projection` with the gate memo of its live events (after a selection found nothing).

    Without its oldest live events (:mod:`projections.retention.log_retention`) the memo is
    not known and stays None: the next selection runs, as after a rebuild.
    """
    if projection.log.live.first:
        return projection
    live = [event for event in live_events(projection) if event.isolation_scope is None]
    memo = gate_memo(live, live_event_sizes(projection), config)
    return replace(projection, gate_memo=memo)
