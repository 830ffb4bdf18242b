"""What two runs of one script must share, whatever service held the session.

Ids and clocks differ from run to run: function-call ids (``adk-<uuid>``),
event ids, invocation ids, timestamps. :func:`normalized_calls` keeps every
recorded ``LlmRequest.contents`` with call ids dropped and, with
``summaries_by_range``, each summary shown to a model replaced by the range
of events it covers (``{"summary_of": [first, last]}``, ordinals of the
session's non-summary events): how runs compacted by different summarizers
(ADK's scripted one, the pipeline's) are compared. The range is read from a
full history of the session (``events``), never from a bounded view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.adk.events.event import Event

from tests.support.adk_runner.recorder import RecordedCall

Json = Any

_CALL_KEYS = ("function_call", "function_response")
_RUN_FIELDS = ("id", "timestamp", "invocation_id")


def summary_ranges(events: Sequence[Event]) -> list[tuple[Event, Json, list[int]]]:
    """Each summary, its compacted content (JSON), and the ordinals of the events it covers."""
    plain = [event for event in events if event.actions.compaction is None]
    ranges: list[tuple[Event, Json, list[int]]] = []
    for event in events:
        compaction = event.actions.compaction
        if compaction is None:
            continue
        start, end = compaction.start_timestamp or 0.0, compaction.end_timestamp or 0.0
        covered = [n for n, e in enumerate(plain) if start <= e.timestamp <= end]
        content = compaction.compacted_content
        dumped = None if content is None else content.model_dump(mode="json", exclude_none=True)
        ranges.append((event, dumped, [covered[0], covered[-1]] if covered else []))
    return ranges


def normalized_calls(
    calls: Sequence[RecordedCall], events: Sequence[Event], *, summaries_by_range: bool
) -> list[tuple[str, list[Json]]]:
    """The calls as (agent, contents), call ids dropped, summaries by range if asked."""
    ranges = [(c, r) for _, c, r in summary_ranges(events)] if summaries_by_range else []
    return [(call.agent, [_content(c, ranges) for c in call.contents]) for call in calls]


def normalized_events(events: Sequence[Event], *, summaries_by_range: bool) -> list[Json]:
    """The session's events as JSON without ids, clocks and call ids; summaries by range too."""
    ranges = {id(event): covered for event, _, covered in summary_ranges(events)}
    out: list[Json] = []
    for event in events:
        dumped = event.model_dump(mode="json", exclude_none=True)
        for field in _RUN_FIELDS:
            dumped.pop(field, None)
        if "content" in dumped:
            dumped["content"] = _without_call_ids(dumped["content"])
        if event.actions.compaction is not None:
            compaction = dumped["actions"].pop("compaction")
            dumped["actions"]["summary_of"] = ranges.get(id(event))
            if not summaries_by_range:
                dumped["actions"]["summary"] = compaction["compacted_content"]
        out.append(dumped)
    return out


def _content(content: Json, ranges: list[tuple[Json, list[int]]]) -> Json:
    for summary, covered in ranges:
        if content == summary:
            return {"summary_of": covered}
    return _without_call_ids(content)


def _without_call_ids(content: Json) -> Json:
    parts = []
    for part in content.get("parts", []):
        part = dict(part)
        for key in _CALL_KEYS:
            if key in part:
                part[key] = {k: v for k, v in part[key].items() if k != "id"}
        parts.append(part)
    return {**content, "parts": parts}
