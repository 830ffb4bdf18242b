"""Read the parts of an event: its calls, responses and texts. Pure: no I/O, no clock.

Small accessors shared by the steps of contents assembly (reference §8), so
each step reads an event's function traffic the same way. An event without
content, or a content without parts, has no parts.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.event import Content, Event, FunctionCall, FunctionResponse, Part


def parts_of(event: Event) -> list[Part]:
    """The parts of `event`'s content, ``[]`` when it has none."""
    if event.content is None or not event.content.parts:
        return []
    return event.content.parts


def function_calls(event: Event) -> list[FunctionCall]:
    """The function calls of `event`, in part order."""
    return [part.function_call for part in parts_of(event) if part.function_call is not None]


def function_responses(event: Event) -> list[FunctionResponse]:
    """The function responses of `event`, in part order."""
    return [
        part.function_response for part in parts_of(event) if part.function_response is not None
    ]


def has_function_calls(event: Event) -> bool:
    """Whether `event` holds at least one function call."""
    return any(part.function_call is not None for part in parts_of(event))


def has_function_responses(event: Event) -> bool:
    """Whether `event` holds at least one function response."""
    return any(part.function_response is not None for part in parts_of(event))


def with_parts(event: Event, parts: Sequence[Part]) -> Event:
    """A copy of `event` whose content holds `parts` (role and other fields kept).

    The session's event is never changed: the copy shares every untouched
    value with it, which is safe because every model here is frozen.
    """
    content = event.content if event.content is not None else Content()
    return event.model_copy(update={"content": content.model_copy(update={"parts": list(parts)})})
