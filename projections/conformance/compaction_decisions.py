"""Replay ``compaction_decisions`` vectors: when the core decides to compact a session. Pure.

A vector is a session ADK 2.13.0's real runner ran with a compaction config
and a scripted model: its raw events in stream order (ADK's summaries left
out), the texts its scripted summarizer answered with, and, as ``expected``,
every compaction ADK made, in order. The replay folds the raw events with
:func:`~projections.compaction.decision.step` and answers each request the core
decides as the pipeline does (:func:`~projections.compaction.render.summary_event`
naming the request, with the text and usage of ADK's summary at the same place),
appended as the very next record, so nothing else is ever in flight.

Each compaction's position (``after_index``) comes from
:attr:`~projections.compaction.decision.Step.chosen_before`: ``j - 1`` when the
window was chosen before record ``j``, ``j`` when after it (the rule and an
example: ``tests/conformance/test_compaction_decisions.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import step
from projections.compaction.render import summary_event
from projections.compaction.summary_request import with_summary_request_id
from projections.event_kinds import is_summary
from projections.fold.projection import SessionProjection
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.event import Event, UsageMetadata, content_to_json
from schemas.keys import Offset, SessionKey, TenantId
from schemas.logged_event import LoggedEvent

TENANT: Final = TenantId("conformance")
SESSION: Final = SessionKey("conformance/decisions/u1/s1")
#: Text of a summary the vector has no answer for (ADK made fewer summaries).
UNSCRIPTED_SUMMARY: Final = "a summary ADK did not make"


@dataclass(frozen=True, slots=True)
class _ScriptedSummary:
    """What ADK's scripted summarizer answered for one summary, and when it was appended."""

    text: str
    usage: UsageMetadata | None
    timestamp: float | None


@dataclass(slots=True)
class _Replay:
    """The fold so far: projection, next offset, decisions, summaries answered."""

    config: CompactionConfig
    script: Sequence[_ScriptedSummary]
    projection: SessionProjection = field(default_factory=lambda: SessionProjection(SESSION))
    next_offset: int = 0
    answered: int = 0
    decisions: list[dict[str, Any]] = field(default_factory=list)

    def fold(self, envelope: Envelope, index: int) -> list[CompactionRequest]:
        """Fold one record; note the request it decided, placed for the last raw event `index`."""
        record = LoggedEvent(Offset(self.next_offset), envelope)
        self.next_offset += 1
        folded = step(self.projection, record, self.config)
        self.projection = folded.projection
        request = folded.request
        if request is None:
            return []
        raw = not is_summary(envelope.event)
        position = index - 1 if raw and folded.chosen_before else index
        self.decisions.append(_decision(request, position))
        return [request]

    def answer(self, request: CompactionRequest, index: int, fallback_timestamp: float) -> None:
        """Append and fold the summary answering `request`, and answer what that decides."""
        scripted = self.script[self.answered] if self.answered < len(self.script) else None
        self.answered += 1
        timestamp = fallback_timestamp
        if scripted is not None and scripted.timestamp is not None:
            timestamp = scripted.timestamp
        range_ends = (
            Event(author="user", timestamp=request.start_timestamp),
            Event(author="user", timestamp=request.end_timestamp),
        )
        event = summary_event(
            range_ends,
            scripted.text if scripted is not None else UNSCRIPTED_SUMMARY,
            event_id=f"summary-{self.answered}",
            invocation_id=f"cmp-summary-{self.answered}",
            timestamp=timestamp,
            usage_metadata=scripted.usage if scripted is not None else None,
        )
        if event is None:  # pragma: no cover - a range always has two ends
            raise ValueError("no summary event for a request")
        envelope = Envelope(
            tenant=TENANT,
            session_key=SESSION,
            producer_id="summarizer",
            idempotency_key=f"summary:{request.request_id}",
            event=with_summary_request_id(event, request.request_id),
        )
        for chained in self.fold(envelope, index):
            self.answer(chained, index, timestamp)


def _decision(request: CompactionRequest, position: int) -> dict[str, Any]:
    seed = request.seed
    return {
        "after_index": position,
        "trigger": request.trigger,
        "summarized_event_ids": list(request.event_ids),
        "seed": None
        if seed is None
        else {
            "timestamp": seed.timestamp,
            "author": seed.author,
            "branch": seed.branch,
            "content": content_to_json(seed.content),
        },
        "start_timestamp": request.start_timestamp,
        "end_timestamp": request.end_timestamp,
    }


def _script(summaries: Sequence[Mapping[str, Any]]) -> list[_ScriptedSummary]:
    return [
        _ScriptedSummary(
            text=str(summary["text"]),
            usage=(
                UsageMetadata.model_validate(summary["usage_metadata"])
                if summary.get("usage_metadata") is not None
                else None
            ),
            timestamp=summary.get("timestamp"),
        )
        for summary in summaries
    ]


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """The core's compactions over the vector's raw events, shaped like ADK's."""
    replay = _Replay(
        config=CompactionConfig.model_validate(vector_input["config"]),
        script=_script(vector_input.get("summaries", [])),
    )
    for index, data in enumerate(vector_input["events"]):
        event = Event.model_validate(data)
        envelope = Envelope(
            tenant=TENANT,
            session_key=SESSION,
            producer_id="adk",
            idempotency_key=event.id or f"event-{index}",
            event=event,
        )
        for request in replay.fold(envelope, index):
            replay.answer(request, index, event.timestamp)
    return {"compactions": replay.decisions}
