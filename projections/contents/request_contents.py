"""Copy the assembled events' contents into a request (reference §8.8). Pure: no I/O.

Session data is never changed: each content is a new object. Gemini pairs
calls with results by position, so the client ids ADK invents for id-less
calls (``adk-<uuid>``) are removed unless the model pairs by id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from projections.contents.parts import function_calls
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


def task_input_content(events: Sequence[Event], isolation_scope: str) -> Content | None:
    """The task of a scoped agent as a user content, None without a delegating call.

    Reference §8.9: a scoped agent runs under the id of the call that
    delegated to it, and that call (in an unscoped parent event, which the
    scope filter hides) is shown first as a user text: its arguments as JSON.
    The first call with that id and with arguments in `events` (stream order,
    rewinds not applied: what the assembly is given, so the slice in ``none``
    mode) is used. The reference only says "JSON text"; as in ADK: key order
    as stored, non-ASCII kept, default separators, and a call without
    arguments gives nothing. Not exercised by the vectors (always unscoped).
    """
    for event in events:
        for call in function_calls(event):
            if call.id == isolation_scope and call.args:
                text = json.dumps(call.args, ensure_ascii=False)
                return Content(role="user", parts=[Part(text=text)])
    return None
