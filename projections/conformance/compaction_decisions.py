"""Replay ``compaction_decisions`` vectors: when the core decides to compact a session. Pure.

A vector is a session ADK 2.13.0's real runner ran with a compaction config
and a scripted model: its raw events in stream order (ADK's summary events
left out), the texts its scripted summarizer answered with, and, as
``expected``, every compaction ADK made, in order.

The replay folds the raw events as one session's records (offsets in stream
order) with :func:`~projections.compaction_decision.replay_decisions` and
answers each request the core decides the way the pipeline does: a summary
event of ADK's shape over the request's range
(:func:`~projections.render.summary_event`) naming the request
(:func:`~projections.summary_request.with_summary_request_id`), carrying the
text and usage of the summary ADK made at the same place in the sequence,
appended as the very next record. So nothing else is ever in flight, as in
ADK, whose hooks summarize synchronously.

**Position** (``after_index``). ADK appends a summary after raw event ``i``
when one of its hooks ran on the events ``0..i``: the post-invocation hook
after an invocation's last event, the pre-request token check before a model
call. The core decides while folding a record ``j``:

* when ``j`` is the first raw event of an invocation the stream has not seen
  (not a summary or a rewind, after at least one invocation), it evaluates
  ADK's post-invocation hook on the projection *before* ``j``: the events
  ``0..j-1``, position ``j - 1``;
* otherwise it evaluates the token trigger on the projection *after* ``j``:
  position ``j``. A decision made while folding an appended summary is at
  the position of the last raw event before it.

A first event of an invocation that itself reports prompt tokens would make
the position ambiguous (either rule could have decided); ADK's runner never
writes one (an invocation starts with the user's message), and the replay
raises on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from projections.compaction_config import CompactionConfig
from projections.compaction_decision import replay_decisions
from projections.projection import SessionProjection
from projections.render import summary_event
from projections.summary_request import with_summary_request_id
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

    def fold(self, envelope: Envelope, position: int) -> list[CompactionRequest]:
        """Fold one record; note each request it decided at `position`."""
        record = LoggedEvent(Offset(self.next_offset), envelope)
        self.next_offset += 1
        self.projection, requests = replay_decisions(
            SESSION, [record], self.config, self.projection
        )
        self.decisions.extend(_decision(request, position) for request in requests)
        return requests

    def answer(self, request: CompactionRequest, position: int, fallback_timestamp: float) -> None:
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
        for chained in self.fold(envelope, position):
            self.answer(chained, position, timestamp)


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


def _starts_invocation(event: Event, seen: set[str]) -> bool:
    """First raw event of an invocation not seen before, after at least one invocation."""
    if event.actions.compaction is not None or event.actions.rewind_before_invocation_id:
        return False
    return bool(event.invocation_id) and event.invocation_id not in seen and bool(seen)


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
    """The core's compactions over the vector's raw events, shaped like ADK's.

    Raises:
        ValueError: an event starts an invocation and reports prompt tokens.
    """
    replay = _Replay(
        config=CompactionConfig.model_validate(vector_input["config"]),
        script=_script(vector_input.get("summaries", [])),
    )
    seen: set[str] = set()
    for index, data in enumerate(vector_input["events"]):
        event = Event.model_validate(data)
        starts = _starts_invocation(event, seen)
        usage = event.usage_metadata
        if starts and usage is not None and usage.prompt_token_count is not None:
            raise ValueError(f"event {event.id} starts an invocation and reports prompt tokens")
        if event.invocation_id and not event.actions.rewind_before_invocation_id:
            seen.add(event.invocation_id)
        envelope = Envelope(
            tenant=TENANT,
            session_key=SESSION,
            producer_id="adk",
            idempotency_key=event.id or f"event-{index}",
            event=event,
        )
        for request in replay.fold(envelope, index - 1 if starts else index):
            replay.answer(request, index, event.timestamp)
    return {"compactions": replay.decisions}
