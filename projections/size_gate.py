"""The "worth compacting" size gate run before the summarizer (reference §3.5).

Pure: no I/O, no clock. A window is worth summarizing only when the request
would shrink by more than the size of the latest summary: the summarizer's
output is expected to be about that long.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import pydantic_core

from projections.masking import latest_summary, mask_compacted
from schemas.event import Content, Event, EventActions, EventCompaction

#: Free-form payloads: their keys are the tool's own, never renamed.
_FREE_FORM_KEYS: Final = frozenset({"args", "response"})
_UPPER: Final = re.compile(r"(?<!^)(?=[A-Z])")


def _genai_field_names(value: Any) -> Any:
    """`value` with genai model field names in snake_case, as genai dumps them.

    Our schema keeps fields it does not model (extras such as ``videoMetadata``,
    and the JSON objects of ``tool_call`` & co.) under their camelCase wire
    names; genai would dump those fields in snake_case too. Call arguments and
    responses are free-form and keep their keys.
    """
    if isinstance(value, dict):
        return {
            _UPPER.sub("_", key).lower(): item
            if key in _FREE_FORM_KEYS
            else _genai_field_names(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_genai_field_names(item) for item in value]
    return value


def content_json_size(content: Content) -> int:
    """Length of the genai SDK's compact model JSON of `content`.

    Snake_case field names, ``None`` fields omitted, compact separators and
    non-ASCII characters kept unescaped (pydantic's JSON serializer), e.g.
    ``{"parts":[{"text":"hi"}],"role":"user"}`` -> 39.
    """
    data = _genai_field_names(content.model_dump(mode="json", exclude_none=True))
    return len(pydantic_core.to_json(data).decode())


def event_json_size(event: Event) -> int:
    """What `event` adds to a request: its compacted content for a summary, else its content."""
    if event.actions.compaction is not None:
        return content_json_size(event.actions.compaction.compacted_content)
    return content_json_size(event.content) if event.content is not None else 0


def events_json_size(events: Sequence[Event]) -> int:
    """Sum of :func:`event_json_size` over `events`."""
    return sum(event_json_size(event) for event in events)


def _weightless_summary(start: float, end: float) -> Event:
    """A summary over ``[start, end]`` whose content is a model content without parts."""
    compaction = EventCompaction(
        start_timestamp=start,
        end_timestamp=end,
        compacted_content=Content(role="model", parts=[]),  # 27 characters of JSON
    )
    return Event(author="user", timestamp=end, actions=EventActions(compaction=compaction))


def is_worth_compacting(live: Sequence[Event], window: Sequence[Event]) -> bool:
    """Whether summarizing `window` would shrink the request by more than the last summary.

    Removable = size of the masked `live` list minus size of the masked list
    with a weightless summary over ``[min, max]`` of the window's timestamps
    appended. The window passes iff removable is strictly greater than the
    size of the latest summary of `live` (0 without one).

    Example: no previous summary, window of two ``"hi"`` user messages:
    removable = 2 * 39 - 27 = 51 > 0, so it passes; a window of content-less
    events has removable = -27 and never passes.

    Args:
        live: The trigger's live event list, stream order (masking is applied
            to it unfiltered).
        window: The chosen window, seed included; must not be empty.
    """
    timestamps = [event.timestamp for event in window]
    weightless = _weightless_summary(min(timestamps), max(timestamps))
    before = events_json_size(mask_compacted(live, ""))
    after = events_json_size(mask_compacted([*live, weightless], ""))
    previous = latest_summary(live)
    previous_size = event_json_size(previous) if previous is not None else 0
    return before - after > previous_size
