"""Copy the assembled events' contents into a request (reference §8.8). Pure: no I/O.

Session data is never changed: each content is a new object. Gemini pairs
calls with results by position, so the client ids ADK invents for id-less
calls (``adk-<uuid>``) are removed unless the model pairs by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from schemas.event import Content, Event, Part

CLIENT_CALL_ID_PREFIX: Final = "adk-"


def _is_client_id(call_id: str | None) -> bool:
    return bool(call_id) and str(call_id).startswith(CLIENT_CALL_ID_PREFIX)


def strip_client_call_ids(part: Part) -> Part:
    """`part` without a call or response id that starts with ``adk-``."""
    call, response = part.function_call, part.function_response
    update: dict[str, object] = {}
    if call is not None and _is_client_id(call.id):
        update["function_call"] = call.model_copy(update={"id": None})
    if response is not None and _is_client_id(response.id):
        update["function_response"] = response.model_copy(update={"id": None})
    return part.model_copy(update=update) if update else part


def request_content(content: Content, *, preserve_function_call_ids: bool) -> Content:
    """A request copy of `content`, client call ids stripped unless preserved.

    Per-event step. Thought parts are kept: only thought-only events were
    dropped earlier (reference §8.2).
    """
    parts = content.parts
    if parts is None:
        return content.model_copy()
    if not preserve_function_call_ids:
        parts = [strip_client_call_ids(part) for part in parts]
    return content.model_copy(update={"parts": list(parts)})


def to_request_contents(
    events: Sequence[Event], *, preserve_function_call_ids: bool
) -> list[Content]:
    """The request contents of `events`, in order; events without content add nothing."""
    return [
        request_content(event.content, preserve_function_call_ids=preserve_function_call_ids)
        for event in events
        if event.content is not None
    ]
