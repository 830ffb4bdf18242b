"""What a compaction trigger hands to the summarizer. Pure value type."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.compaction_request import CompactionTrigger
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class CompactionWindow:
    """A chosen window of events to summarize.

    Attributes:
        trigger: Which trigger chose the window.
        events: The events handed to the summarizer, in order; the seed first
            when there is one.
        seed: The synthetic event carrying the previous summary
            (token threshold only), else None.
        start_timestamp: Timestamp of the first item of `events`; becomes the
            summary's start (reference §7.3: list position, not minimum).
        end_timestamp: Timestamp of the last item of `events`; becomes the
            summary's end.
    """

    trigger: CompactionTrigger
    events: tuple[Event, ...]
    seed: Event | None
    start_timestamp: float
    end_timestamp: float

    @classmethod
    def of(
        cls, trigger: CompactionTrigger, events: tuple[Event, ...], seed: Event | None
    ) -> CompactionWindow:
        """A window over `events` (seed first if any), its range from the first/last item.

        Raises:
            ValueError: `events` is empty.
        """
        if not events:
            raise ValueError("a compaction window needs at least one event")
        return cls(trigger, events, seed, events[0].timestamp, events[-1].timestamp)

    @property
    def summarized_events(self) -> tuple[Event, ...]:
        """The real session events of the window: `events` without the seed."""
        return self.events[1:] if self.seed is not None else self.events

    @property
    def event_ids(self) -> tuple[str, ...]:
        """Ids of :attr:`summarized_events`, in the order handed to the summarizer."""
        return tuple(event.id for event in self.summarized_events)
