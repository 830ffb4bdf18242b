"""Open call obligations and the longest self-contained window prefix (reference §3.4).

Pure: no I/O, no clock. Compaction must not cut a function call away from its
eventual response. An *obligation* is keyed by id: a ``function_call`` part id,
or a key of ``requested_tool_confirmations`` / ``requested_auth_configs``
opens it; a ``function_response`` part with the same id closes it. Empty or
missing ids are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from projections.event_kinds import is_summary
from schemas.event import Event

#: Synthetic calls that ask the client for something (reference §1.5).
CLIENT_FUNCTION_CALL_NAMES: Final = frozenset(
    {"adk_request_credential", "adk_request_confirmation", "adk_request_input"}
)


def call_ids(event: Event) -> list[str]:
    """The non-empty ids of the event's ``function_call`` parts, in order."""
    parts = event.content.parts if event.content is not None else None
    return [
        part.function_call.id
        for part in parts or ()
        if part.function_call is not None and part.function_call.id
    ]


def response_ids(event: Event) -> list[str]:
    """The non-empty ids of the event's ``function_response`` parts, in order."""
    parts = event.content.parts if event.content is not None else None
    return [
        part.function_response.id
        for part in parts or ()
        if part.function_response is not None and part.function_response.id
    ]


def request_keys(event: Event) -> list[str]:
    """Call ids the event asks the client to confirm or authorize."""
    actions = event.actions
    return [*actions.requested_tool_confirmations, *actions.requested_auth_configs]


def strict_prefix_length(window: Sequence[Event], ignored: Iterable[str] = ()) -> int:
    """Length of the longest prefix of `window` that leaves no obligation open.

    Per event, responses close first and then calls and request keys open, so
    an event that answers call ``x`` and also requests confirmation for ``x``
    (ADK's placeholder response for a tool awaiting confirmation) leaves ``x``
    open. Ids in `ignored` never open anything.

    Example: ``q, call(c1), response(c1), call(c2)`` -> 3.
    """
    skip = set(ignored)
    open_ids: set[str] = set()
    safe = 0
    for position, event in enumerate(window):
        open_ids.difference_update(response_ids(event))
        open_ids.update(i for i in (*call_ids(event), *request_keys(event)) if i not in skip)
        if not open_ids:
            safe = position + 1
    return safe


def newest_invocation_id(live: Sequence[Event]) -> str:
    """Invocation id of the last non-summary event that has one (``""`` if none)."""
    for event in reversed(live):
        if event.invocation_id and not is_summary(event):
            return event.invocation_id
    return ""


def dead_call_ids(window: Sequence[Event], live: Sequence[Event]) -> set[str]:
    """Calls opened in `window` that can no longer be answered.

    A call is dead when the event opening it is not in the newest invocation
    (which may still be running; when no live event has an invocation id there
    is none), it is not protected, and no response in
    `live` answers it. Protected are long-running calls, except client calls
    (credential/confirmation/input requests) of older invocations, and the
    confirmation/auth request keys of events of the newest invocation or of
    events without an invocation id. A response does not count as an answer
    when its own event requests confirmation/auth for the same id.
    """
    newest = newest_invocation_id(live)
    protected: set[str] = set()
    answered: set[str] = set()
    for event in live:
        current = event.invocation_id == newest or not event.invocation_id
        if event.long_running_tool_ids:
            if current:
                protected.update(event.long_running_tool_ids)
            else:
                protected.update(set(event.long_running_tool_ids) - _client_call_ids(event))
        requests = request_keys(event)
        if current:
            protected.update(requests)
        answered.update(set(response_ids(event)) - set(requests))
    # With no invocation id anywhere there is no newest invocation: an event
    # without one is not "in" it, so its calls can be dead too.
    opened = {i for e in window if not newest or e.invocation_id != newest for i in call_ids(e)}
    return opened - protected - answered


def _client_call_ids(event: Event) -> set[str]:
    parts = event.content.parts if event.content is not None else None
    return {
        part.function_call.id
        for part in parts or ()
        if part.function_call is not None
        and part.function_call.id
        and part.function_call.name in CLIENT_FUNCTION_CALL_NAMES
    }


def self_contained_prefix(window: Sequence[Event], live: Sequence[Event]) -> list[Event]:
    """The longest prefix of `window` that compaction may summarize.

    1. If no obligation stays open, the whole window.
    2. If the strict prefix is non-empty and ends on an invocation boundary,
       the strict prefix.
    3. Otherwise calls proven dead (:func:`dead_call_ids`, with the full live
       list as context) are ignored and the longer of the two prefixes wins.

    Deliberate ADK quirk (reference §14.15): a dead call that opens an
    invocation is caught by rule 2 and blocks at that boundary.

    Example: ``q1 a1 | q2 call(dead) | q3 a3`` (``|`` = invocation boundary,
    newest invocation is the third): the strict prefix stops inside the
    second invocation, the call is dead, so all six events are returned.

    Args:
        window: Candidate events, stream order.
        live: All live events of the trigger (rewinds applied), stream order.

    Returns:
        A prefix of `window`, possibly empty.
    """
    safe = strict_prefix_length(window)
    if safe == len(window):
        return list(window)
    if safe > 0 and window[safe - 1].invocation_id != window[safe].invocation_id:
        return list(window[:safe])
    dead = dead_call_ids(window, live)
    if dead:
        safe = max(safe, strict_prefix_length(window, dead))
    return list(window[:safe])
