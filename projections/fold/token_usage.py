"""Tokens a session's model calls reported. Pure: no I/O, no clock.

Two different readings (reference §3.6, §5):

* the *last observed prompt tokens*: the newest ``prompt_token_count`` of
  the live, unscoped events since the newest summary event (any author), as
  the post-invocation token trigger reads it; None right after a summary,
  until a model call reports again;
* the *totals*: every count any applied event reported (summaries and
  rewound events included: those tokens were spent). A total saturates at
  :data:`MAX_TOKEN_TOTAL` (int64's maximum) instead of growing past what a
  snapshot can encode: a sum of many large reported counts stops there.

Memory: three numbers per session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from projections.compaction.token_count import recorded_prompt_token_count
from projections.event_kinds import is_summary
from schemas.event import Event

MAX_TOKEN_TOTAL: Final = 2**63 - 1
"""Where the token totals stop: the largest int64, the largest integer a snapshot encodes."""


@dataclass(frozen=True, slots=True)
class TokenTally:
    """The token usage a projection keeps.

    Attributes:
        last_prompt_tokens: Newest prompt-token count of the live unscoped
            events since the newest summary event; None when there is none.
        total_prompt_tokens: Sum of every reported prompt-token count, at most
            :data:`MAX_TOKEN_TOTAL`.
        total_candidates_tokens: Sum of every reported candidates-token count,
            at most :data:`MAX_TOKEN_TOTAL`.
    """

    last_prompt_tokens: int | None = None
    total_prompt_tokens: int = 0
    total_candidates_tokens: int = 0


def add_reported(tally: TokenTally, event: Event) -> TokenTally:
    """`tally` with the totals of one more applied event (any event), saturating.

    Example: totals ``2**63 - 10`` and a report of 100 -> ``2**63 - 1``.
    """
    usage = event.usage_metadata
    if usage is None or (usage.prompt_token_count is None and usage.candidates_token_count is None):
        return tally
    return TokenTally(
        tally.last_prompt_tokens,
        _saturated(tally.total_prompt_tokens + (usage.prompt_token_count or 0)),
        _saturated(tally.total_candidates_tokens + (usage.candidates_token_count or 0)),
    )


def _saturated(total: int) -> int:
    return min(total, MAX_TOKEN_TOTAL)


def observe_live(tally: TokenTally, event: Event) -> TokenTally:
    """`tally` after one more live event: the last prompt count moves or resets.

    Example: counts 40 then 70 -> 70; then a summary event -> None; a scoped
    event changes nothing.
    """
    if event.isolation_scope is not None:
        return tally
    if is_summary(event):
        if tally.last_prompt_tokens is None:
            return tally
        return TokenTally(None, tally.total_prompt_tokens, tally.total_candidates_tokens)
    usage = event.usage_metadata
    if usage is None or usage.prompt_token_count is None:
        return tally
    return TokenTally(
        usage.prompt_token_count, tally.total_prompt_tokens, tally.total_candidates_tokens
    )


def recount_last(tally: TokenTally, live: Iterable[Event]) -> TokenTally:
    """`tally` with the last prompt count read again from a whole live list."""
    count = recorded_prompt_token_count(list(live), agent_name="", isolation_scope=None)
    return replace(tally, last_prompt_tokens=count)
