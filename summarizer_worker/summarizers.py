"""The port every summarizer backend implements, and what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from schemas.event import Event, UsageMetadata


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """One summary of a window, ready for ``projections.compaction.render.summary_event``."""

    text: str
    """The summary; never empty (no summary at all is ``None`` instead)."""

    usage: UsageMetadata | None = None
    """Tokens the summarizer's model call used; None for backends without a model."""


class Summarizer(Protocol):
    """Summarizes a compaction window into the text of a summary event.

    Backends take the events, not a rendered transcript: a model backend
    renders them with ``projections.compaction.render`` (reference §7.1), a deterministic
    one reads their structure (asks, calls, responses) directly.
    """

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        """The summary of `window`, or None when there is none to append.

        None for an empty window (no model call, reference §7.3) or when a
        model returned no content; a shell then appends no summary event.

        Args:
            window: The events to summarize, in stream order; a rolling seed
                (the previous summary authored ``"model"``, reference §5.4)
                comes first.

        Raises:
            SummarizerError: The backend failed; its ``retriable`` says
                whether the same call may succeed later.
        """
        ...
