"""Generated sessions kept in order (:mod:`projections.compaction.live_order`), and configs.

:class:`Orderer` re-times the events :func:`~tests.support.strategies.session_events`
generates so the live list stays in order: rising timestamps, summaries whose
ends rise and follow what they summarize, the summarizer's answers to
requests; now and then (when asked) an event that steps back in time, and a
call id reused from earlier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from projections.compaction.config import CompactionConfig
from projections.compaction.summary_request import with_summary_request_id
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from tests.support.events import summary_event
from tests.support.strategies import ARMED_THRESHOLD

Json = dict[str, Any]


@st.composite
def compaction_configs(draw: st.DrawFn) -> CompactionConfig:
    sliding, token = draw(st.sampled_from(((True, False), (False, True), (True, True))))
    return CompactionConfig(
        compaction_interval=draw(st.integers(1, 3)) if sliding else None,
        overlap_size=draw(st.integers(0, 3)) if sliding else None,
        token_threshold=ARMED_THRESHOLD if token else None,
        event_retention_size=draw(st.integers(0, 3)) if token else None,
    )


class Orderer:
    """Re-times generated events so that the live list stays in order, mostly."""

    def __init__(self, draw: Callable[[Any], Any], break_order: bool) -> None:
        self.draw = draw
        self.break_order = break_order
        self.clock = 100.0
        self.raw: list[float] = []
        self.last_end = 0.0
        self.call_ids: list[str] = []

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    def raw_event(self, event: Event) -> Event:
        data: Json = event.model_dump(mode="json", exclude_unset=True)
        data["timestamp"] = self.tick()
        if self.break_order and self.draw(st.integers(0, 29)) == 0:
            data["timestamp"] = self.clock - self.draw(st.integers(0, 5))
        for part in (data.get("content") or {}).get("parts") or ():
            call = part.get("function_call")
            if call and call.get("id"):
                if self.call_ids and self.draw(st.integers(0, 9)) == 0:
                    call["id"] = self.draw(st.sampled_from(self.call_ids))  # a reused id
                self.call_ids.append(call["id"])
        timed = Event.model_validate(data)
        self.raw.append(timed.timestamp)
        return timed

    def summary(self, event: Event) -> Event | None:
        later = [t for t in self.raw if t > self.last_end]
        if not later:
            return None
        end = self.draw(st.sampled_from(later))
        start = self.draw(st.sampled_from([t for t in self.raw if t <= end]))
        self.last_end = end
        data: Json = event.model_dump(mode="json", exclude_unset=True)
        data["timestamp"] = self.tick()
        compaction = data["actions"]["compaction"]
        compaction["start_timestamp"], compaction["end_timestamp"] = start, end
        data.pop("isolation_scope", None)
        return Event.model_validate(data)

    def answer(self, request: CompactionRequest, serial: int) -> Event:
        self.last_end = max(self.last_end, request.end_timestamp)
        summary = summary_event(
            f"ans{serial}", request.start_timestamp, request.end_timestamp, self.tick()
        )
        return with_summary_request_id(summary, request.request_id)

    def incoming(
        self, generated: Event, serial: int, requested: CompactionRequest | None, waiting: bool
    ) -> list[Event]:
        """What reaches the topic for one generated event, re-timed.

        Before it, now and then, the summarizer's answer to `requested` when
        the session is `waiting`; then the event itself (a summary only when
        one can follow what came before). A scoped event is left out.
        """
        if generated.isolation_scope is not None:
            return []
        events: list[Event] = []
        if waiting and requested is not None and self.draw(st.booleans()):
            events.append(self.answer(requested, serial))
        if generated.actions.compaction is not None:
            summary = self.summary(generated)
            if summary is not None:
                events.append(summary)
        else:
            events.append(self.raw_event(generated))
        return events
