"""Pair every function call with its response (reference §8.7). Pure: no I/O, no clock.

Applied to the list after other agents' messages were rewritten, in this order:

1. drop responses whose call was never seen before them (orphan responses);
2. regroup the history around the calls the newest event answers;
3. put every response right after its call, dropping stale progress chatter;
4. drop calls with an id that nothing answers, unless long-running.

Steps 2 and 3 live in :mod:`projections.contents.response_order`. Every step needs
global context (calls before, responses anywhere), so none is per event.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.contents.parts import (
    has_function_calls,
    has_function_responses,
    parts_of,
    with_parts,
)
from projections.contents.response_order import rearrange_async_responses, rearrange_latest_response
from schemas.event import Event, FunctionResponse


def _is_answerable(
    response: FunctionResponse, call_ids: set[str], idless_call_names: set[str]
) -> bool:
    if response.id:
        return response.id in call_ids
    return bool(response.name) and response.name in idless_call_names


def drop_orphan_responses(events: Sequence[Event]) -> list[Event]:
    """`events` without the function responses that answer no earlier call.

    A response is kept only when an earlier event holds a call with its id (a
    response without id: an id-less call with the same name). Other parts stay;
    an event whose parts were all orphan responses goes.

    Example: ``u, resp zz9, "Hi!"`` -> ``u, "Hi!"``.
    """
    call_ids: set[str] = set()
    idless_call_names: set[str] = set()
    result: list[Event] = []
    for event in events:
        parts = parts_of(event)
        if parts and has_function_responses(event):
            kept = [
                part
                for part in parts
                if part.function_response is None
                or _is_answerable(part.function_response, call_ids, idless_call_names)
            ]
            if kept:
                result.append(event if len(kept) == len(parts) else with_parts(event, kept))
        else:
            result.append(event)
        for part in parts:
            if (call := part.function_call) is None:
                continue
            if call.id:
                call_ids.add(call.id)
            elif call.name:
                idless_call_names.add(call.name)
    return result


def drop_orphan_calls(events: Sequence[Event]) -> list[Event]:
    """`events` without the calls with an id that no response anywhere answers.

    Calls listed in any event's ``long_running_tool_ids`` stay (they are
    pending by design), and so do calls without an id. An event left without
    parts goes.

    Deliberate ADK quirk (reference §14.12): a plain call left unanswered, e.g.
    by an interrupted turn, silently disappears from the request.
    """
    answered = {
        part.function_response.id
        for event in events
        for part in parts_of(event)
        if part.function_response is not None and part.function_response.id
    }
    long_running = {call_id for event in events for call_id in (event.long_running_tool_ids or ())}
    result: list[Event] = []
    for event in events:
        parts = parts_of(event)
        if not parts or not has_function_calls(event):
            result.append(event)
            continue
        # Deliberate ADK quirk (§14.12): an unanswered plain call just vanishes.
        kept = [
            part
            for part in parts
            if part.function_call is None
            or not part.function_call.id
            or part.function_call.id in answered
            or part.function_call.id in long_running
        ]
        if kept:
            result.append(event if len(kept) == len(parts) else with_parts(event, kept))
    return result


def pair_calls_with_responses(events: Sequence[Event]) -> list[Event]:
    """The four pairing steps of reference §8.7, in order."""
    paired = drop_orphan_responses(events)
    paired = rearrange_latest_response(paired)
    paired = rearrange_async_responses(paired)
    return drop_orphan_calls(paired)
