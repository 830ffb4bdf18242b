"""Token-threshold compaction, before a model call or after an invocation (reference §5).

Pure: no I/O, no clock. The seed's fresh invocation id is an argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.compaction.config import CompactionConfig
from projections.compaction.masking import latest_summary
from projections.compaction.obligations import call_ids, response_ids, self_contained_prefix
from projections.compaction.rolling_seed import seed_event
from projections.compaction.size_gate import EventSizes, passes_size_gate
from projections.compaction.token_count import observed_prompt_token_count
from projections.compaction.window import CompactionWindow
from projections.event_kinds import is_summary
from projections.fold.rewind import drop_rewound
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class TokenHook:
    """Where the token check runs and for whom.

    Attributes:
        agent_name: The current agent before a model call; ``""`` after an
            invocation (then any author's token count is read).
        current_branch: The invocation branch (``None`` after an invocation).
        isolation_scope: The invocation's isolation scope (``None`` after an
            invocation); only events of this scope are considered.
    """

    agent_name: str = ""
    current_branch: str | None = None
    isolation_scope: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedCount:
    """A prompt-token count the caller read, in place of reading it from the events.

    Attributes:
        count: The count (None: nothing recorded and nothing countable).
    """

    count: int | None


#: The post-invocation flavour: no agent, no branch, unscoped.
POST_INVOCATION = TokenHook()


@dataclass(frozen=True, slots=True)
class TokenThresholdOutcome:
    """Everything the token trigger computed, whether or not it fired.

    Attributes:
        observed_prompt_token_count: The count compared with the threshold
            (None when nothing is recorded and nothing is countable).
        previous_compaction_end_timestamp: End of the latest surviving
            summary of the scoped events, ``0.0`` if none.
        candidates: Raw scoped events newer than that end, stream order.
        window: What to summarize, or None when the trigger does not fire.
    """

    observed_prompt_token_count: int | None
    previous_compaction_end_timestamp: float
    candidates: tuple[Event, ...]
    window: CompactionWindow | None


def safe_split_index(candidates: Sequence[Event], retention: int) -> int:
    """Where the retained tail starts so that it holds no response without its call.

    Starts at ``len - retention`` and only ever moves earlier: walking back,
    the first index at or before that whose tail has no orphaned response.

    Example: ``q, text, call(p1, p2), resp(p1), resp(p2), text`` with retention 2:
    the tail from index 4 lacks calls p1/p2, so the split moves back to 2.
    """
    initial = len(candidates) - retention
    if initial <= 0:
        return 0
    orphans: set[str] = set()
    for index in range(len(candidates) - 1, -1, -1):
        event = candidates[index]
        orphans.update(response_ids(event))
        orphans.difference_update(call_ids(event))
        if not orphans and index <= initial:
            return index
    return 0


def evaluate_token_threshold(
    events: Sequence[Event],
    config: CompactionConfig,
    hook: TokenHook = POST_INVOCATION,
    *,
    seed_invocation_id: str = "seed",
    sizes: EventSizes | None = None,
    observed: ObservedCount | None = None,
) -> TokenThresholdOutcome:
    """Run the token trigger and report what it saw and chose.

    Worked example (§5.6), threshold 50, retention 2: e1 (100), e2 (101),
    summary P [100, 101] at 102, e4..e7 (103..106), e7 recorded 100 prompt
    tokens. 100 >= 50; candidates e4..e7; split keeps e6, e7; window e4, e5
    with a seed at 100 carrying P's text, so the new summary spans [100, 104],
    contains P, and the next request shows it (at 104), then e6, e7.

    Args:
        events: The whole session, stream order.
        config: The app's compaction config.
        hook: Which hook runs the check.
        seed_invocation_id: Fresh invocation id for the seed event.
        sizes: Per-event sizes for the size gate
            (:func:`~projections.compaction.size_gate.worth_compacting`); None runs the
            reference gate, which serializes the live events.
        observed: The prompt-token count, read by the caller (the view's
            estimate); None reads it from `events`.

    Returns:
        The outcome; its window is None when nothing is to be summarized.
    """
    live = drop_rewound(events)
    scoped = [event for event in live if event.isolation_scope == hook.isolation_scope]
    previous = latest_summary(scoped)
    previous_end = 0.0
    if previous is not None and previous.actions.compaction is not None:
        previous_end = previous.actions.compaction.end_timestamp
    candidates = tuple(e for e in scoped if not is_summary(e) and e.timestamp > previous_end)
    count = (
        observed.count
        if observed is not None
        else observed_prompt_token_count(
            live,
            agent_name=hook.agent_name,
            current_branch=hook.current_branch,
            isolation_scope=hook.isolation_scope,
        )
    )
    outcome = TokenThresholdOutcome(count, previous_end, candidates, None)
    threshold, retention = config.token_threshold, config.event_retention_size
    if threshold is None or retention is None:
        return outcome
    if count is None or count < threshold or len(candidates) <= retention:
        return outcome
    split = len(candidates) if retention == 0 else safe_split_index(candidates, retention)
    window = self_contained_prefix(candidates[:split], scoped)
    if not window:
        return outcome
    seed = None if previous is None else seed_event(previous, invocation_id=seed_invocation_id)
    items = window if seed is None else [seed, *window]
    if not passes_size_gate(scoped, items, sizes):
        return outcome
    chosen = CompactionWindow.of("token_threshold", tuple(items), seed)
    return TokenThresholdOutcome(count, previous_end, candidates, chosen)


def select_token_threshold_window(
    events: Sequence[Event],
    config: CompactionConfig,
    hook: TokenHook = POST_INVOCATION,
    *,
    seed_invocation_id: str = "seed",
    sizes: EventSizes | None = None,
    observed: ObservedCount | None = None,
) -> CompactionWindow | None:
    """The token-threshold window, or None if the trigger does not fire.

    See :func:`evaluate_token_threshold`. A summary produced for the
    pre-request hook gets the hook's isolation scope and is appended at once.
    """
    return evaluate_token_threshold(
        events, config, hook, seed_invocation_id=seed_invocation_id, sizes=sizes, observed=observed
    ).window
