"""The default summarizer: deterministic, no network, bounded. Pure logic.

It keeps what a later turn needs, section by section (`summary_text.BUDGETS`):
the user's asks, the agents' decisions and answers, the exact names of the
tools called with their latest arguments and key result, and what is still
open (questions no agent text followed, calls without a response). A rolling
seed is parsed and folded in, so a summary of a summary stays within
`max_chars` however often it rolls.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from schemas.event import Event
from summarizer_worker.digest import extract
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_text import render_digest

logger = logging.getLogger(__name__)

DEFAULT_MAX_CHARS: Final = 4000
#: Below this the sections' shares are too small to hold a clipped item each.
MIN_MAX_CHARS: Final = 500


def extractive_summary(window: Sequence[Event], max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    """The extractive summary text of `window`, None for an empty window.

    Example: user ``"Book a room for Friday?"``, then ``booker`` calls
    ``find_rooms(day="fri")`` and gets ``{"result": ["A1"]}`` ->::

        Conversation language: English
        User requests:
        - Book a room for Friday?
        Tools used:
        - find_rooms (1 call): {'day': 'fri'} -> ['A1']
        Open questions:
        - asked: Book a room for Friday?
    """
    if not window:
        return None
    return render_digest(extract(window), max_chars)


class ExtractiveSummarizer:
    """The `Summarizer` that needs no model: `extractive_summary` behind the port."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        """Summaries of at most `max_chars` characters.

        Raises:
            ValueError: `max_chars` is below `MIN_MAX_CHARS`.
        """
        if max_chars < MIN_MAX_CHARS:
            raise ValueError(f"max_chars={max_chars!r}: must be at least {MIN_MAX_CHARS}")
        self.max_chars = max_chars

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        """The summary of `window`; no usage, as no model is called."""
        text = extractive_summary(window, self.max_chars)
        if text is None:
            return None
        logger.debug("summarized events=%d chars=%d backend=extractive", len(window), len(text))
        return SummaryResult(text=text)
