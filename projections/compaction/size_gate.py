"""The "worth compacting" size gate run before the summarizer (reference §3.5).

Pure: no I/O, no clock. A window is worth summarizing only when the request
would shrink by more than the size of the latest summary: the summarizer's
output is expected to be about that long.

Two implementations of the same rule:

* :func:`is_worth_compacting` is the reference, written as the rule reads:
  it masks the live list twice (without and with a weightless summary over
  the window) and serializes every item of both;
* :func:`worth_compacting` reads the same answer from per-event sizes that
  the projection computed once, when it applied each event
  (:func:`removable_size`): one pass over the live list, no serialization,
  no sort. A property test holds the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import pydantic_core

from projections.compaction.masking import (
    coverage,
    is_covered,
    latest_summary,
    mask_compacted,
    summary_range,
    surviving_summary_positions,
)
from projections.event_kinds import is_summary
from schemas.event import Content, Event, EventActions, EventCompaction

#: Free-form payloads: their keys are the tool's own, never renamed.
_FREE_FORM_KEYS: Final = frozenset({"args", "response"})
_UPPER: Final = re.compile(r"(?<!^)(?=[A-Z])")

WEIGHTLESS_SUMMARY_SIZE: Final = 27
"""Characters of ``{"parts":[],"role":"model"}``, the content of the gate's weightless summary."""

EventSizes = Callable[[Event], int]
"""What one event adds to a request: :func:`event_json_size`, or a copy of it kept per event."""


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

    A content whose every key is a model field name (no extra fields, no
    free-form object but call arguments and responses, whose keys are kept
    anyway) is serialized directly; any other goes through the renaming
    walk. Both give the same JSON (a property test holds them equal).
    """
    if _model_fields_only(content):
        return len(content.model_dump_json(exclude_none=True))
    return renamed_content_json_size(content)


def renamed_content_json_size(content: Content) -> int:
    """:func:`content_json_size` through the walk that renames every key genai would rename."""
    data = _genai_field_names(content.model_dump(mode="json", exclude_none=True))
    return len(pydantic_core.to_json(data).decode())


def _model_fields_only(content: Content) -> bool:
    """Whether no key of `content`'s JSON would be renamed: model fields and free-form args only."""
    if content.model_extra:
        return False
    for part in content.parts or ():
        if part.model_extra or (
            part.executable_code is not None
            or part.code_execution_result is not None
            or part.tool_call is not None
            or part.tool_response is not None
        ):
            return False
        for inner in (part.function_call, part.function_response, part.inline_data, part.file_data):
            if inner is not None and inner.model_extra:
                return False
    return True


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


def removable_size(
    live: Sequence[Event], start: float, end: float, sizes: EventSizes = event_json_size
) -> int:
    """What appending a weightless summary over ``[start, end]`` removes from the masked `live`.

    Masking (reference §3.3) shows the surviving summaries and the raw events
    outside their union. Appending a summary W over ``[start, end]`` (27
    characters of content) hides the surviving summaries W contains
    (``start <= s`` and ``e <= end``: of identical ranges the one appended
    last survives) and the raw events with ``start <= ts <= end`` that no
    survivor covered yet; every range W contains lies inside ``[start, end]``,
    so nothing else is uncovered. Hence, when W survives::

        removable = sizes of the survivors W contains
                  + sizes of the uncovered raw events inside [start, end] - 27

    When a survivor strictly contains W, W vanishes and nothing changes (0),
    while this sum is -27 (W contains no survivor and every raw event inside
    it is covered): both fail the gate, whose bar is never negative. NaN
    bounds compare false everywhere, as in masking. The result only grows as
    ``[start, end]`` widens: what :mod:`projections.compaction.gate_memo` relies on.

    Args:
        live: The trigger's live event list, stream order.
        start: The weightless summary's start.
        end: The weightless summary's end.
        sizes: What each event of `live` adds to a request.

    Returns:
        The removable characters, for a weightless summary that survives.
    """
    return _removable(live, surviving_summary_positions(live), start, end, sizes)


def _removable(
    live: Sequence[Event], survivors: list[int], start: float, end: float, sizes: EventSizes
) -> int:
    ranges = [summary_range(live[position]) for position in survivors]
    covered = coverage(ranges)
    total = -WEIGHTLESS_SUMMARY_SIZE
    for position, (first, last) in zip(survivors, ranges, strict=True):
        if start <= first and last <= end:
            total += sizes(live[position])
    for event in live:
        timestamp = event.timestamp
        if (
            start <= timestamp <= end
            and not is_summary(event)
            and not is_covered(timestamp, covered)
        ):
            total += sizes(event)
    return total


def previous_summary_size(
    live: Sequence[Event], sizes: EventSizes = event_json_size, survivors: list[int] | None = None
) -> int:
    """The gate's bar: the size of the latest surviving summary of `live`, 0 without one."""
    positions = surviving_summary_positions(live) if survivors is None else survivors
    return sizes(live[positions[-1]]) if positions else 0


def worth_compacting(live: Sequence[Event], window: Sequence[Event], sizes: EventSizes) -> bool:
    """:func:`is_worth_compacting` from per-event sizes: one pass, no serialization.

    Args:
        live: The trigger's live event list, stream order.
        window: The chosen window, seed included; must not be empty.
        sizes: What each event of `live` adds to a request (the window's
            events are not measured, only their timestamps are read).
    """
    timestamps = [event.timestamp for event in window]
    start, end = min(timestamps), max(timestamps)  # as the reference takes them, NaN included
    survivors = surviving_summary_positions(live)
    removable = _removable(live, survivors, start, end, sizes)
    return removable > previous_summary_size(live, sizes, survivors)


def passes_size_gate(
    live: Sequence[Event], window: Sequence[Event], sizes: EventSizes | None
) -> bool:
    """The gate for a trigger: the reference without `sizes`, else :func:`worth_compacting`."""
    if sizes is None:
        return is_worth_compacting(live, window)
    return worth_compacting(live, window, sizes)
