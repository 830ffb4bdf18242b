"""Put every function response right after its call (reference §8.7 steps 2-3). Pure.

Models want each call followed by its answer. Two rearrangements do that:

* the **latest-response** rearrangement, when the newest event answers calls
  made further back (a long-running tool finishing, a client posting a result);
* the **async-response** rearrangement over the whole history, which also
  collapses a long-running tool's progress updates into its last one.

Both need global context: which call owns a response depends on the calls
before it, and the latest rearrangement can discard the tail of the list.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from projections.contents.other_agents import USER
from projections.contents.parts import (
    function_calls,
    function_responses,
    has_function_calls,
    has_function_responses,
    parts_of,
    with_parts,
)
from projections.event_kinds import is_summary
from schemas.event import Event, FunctionResponse, Part


def merge_response_events(events: Sequence[Event]) -> Event:
    """One event holding the responses of `events`, later ones replacing earlier ones.

    The first event is the base (its fields and parts). Each later function
    response replaces the part with the same response id (a missing id is a
    key too), or is appended; every other later part is appended.

    Example: ``[r(a)=1, r(b)=1]`` + ``[r(a)=2, text]`` -> ``[r(a)=2, r(b)=1, text]``.
    """
    first = events[0]
    parts = list(parts_of(first))
    slot: dict[str | None, int] = {}
    for index, part in enumerate(parts):
        if part.function_response is not None:
            slot[part.function_response.id] = index
    for event in events[1:]:
        for part in parts_of(event):
            response = part.function_response
            if response is not None and response.id in slot:
                parts[slot[response.id]] = part
                continue
            if response is not None:
                slot[response.id] = len(parts)
            parts.append(part)
    return with_parts(first, parts)


def _response_owners(events: Sequence[Event]) -> dict[tuple[int, int], int]:
    """``(event position, part index)`` of each response -> position of its owning call.

    The owner is the latest earlier event holding a matching call: same id, or,
    for a response without id, an id-less call of the same (non-empty) name.
    Responses with no owner are absent.
    """
    owners: dict[tuple[int, int], int] = {}
    latest_by_id: dict[str, int] = {}
    latest_by_idless_name: dict[str, int] = {}
    for position, event in enumerate(events):
        for index, part in enumerate(parts_of(event)):
            response = part.function_response
            if response is None:
                continue
            owner = _owner(response, latest_by_id, latest_by_idless_name)
            if owner is not None:
                owners[(position, index)] = owner
        for call in function_calls(event):
            if call.id:
                latest_by_id[call.id] = position
            elif call.name:
                latest_by_idless_name[call.name] = position
    return owners


def _owner(
    response: FunctionResponse,
    latest_by_id: dict[str, int],
    latest_by_idless_name: dict[str, int],
) -> int | None:
    if response.id:
        return latest_by_id.get(response.id)
    return latest_by_idless_name.get(response.name) if response.name else None


def rearrange_latest_response(events: Sequence[Event]) -> list[Event]:
    """History regrouped around the calls the newest event's responses answer.

    When the last event holds function responses, each one's owning call event
    is found (:func:`_response_owners`); the last event's other parts go with
    the latest owner. If the only owner is the event just before the last one,
    nothing changes. Otherwise the result is the events up to the latest owner,
    where response parts owned by any owner are taken out of earlier events
    (an event left with neither calls nor responses goes), and after each
    owner a merged response event: its earlier responses (with the other
    parts of non-call events holding them), then its share of the last event.

    Deliberate ADK quirk (reference §14.13): everything after the latest
    owning call is discarded, model text the user already saw included.

    Example: ``u, call c1, "waiting", [resp c1, "here"]`` ->
    ``u, call c1, [resp c1, "here"]``.
    """
    if len(events) < 2 or not has_function_responses(events[-1]):
        return list(events)
    last = len(events) - 1
    owners = _response_owners(events)
    shares: dict[int, list[Part]] = {}
    others: list[Part] = []
    for index, part in enumerate(parts_of(events[last])):
        if part.function_response is None:
            others.append(part)
        elif (owner := owners.get((last, index))) is not None:
            shares.setdefault(owner, []).append(part)
    if not shares:
        return list(events)
    latest = max(shares)
    shares[latest].extend(others)
    if latest == last - 1 and len(shares) == 1:
        return list(events)

    earlier = _earlier_responses(events, owners, shares, first=min(shares))
    result: list[Event] = []
    # Deliberately stops at the latest owning call: later events, text replies
    # included, are discarded as in ADK (reference §14.13).
    for position in range(latest + 1):
        event = events[position]
        parts = parts_of(event)
        if parts and has_function_responses(event):
            kept = [
                part
                for index, part in enumerate(parts)
                if part.function_response is None or owners.get((position, index)) not in shares
            ]
            if not any(
                p.function_response is not None or p.function_call is not None for p in kept
            ):
                continue
            if len(kept) != len(parts):
                event = with_parts(event, kept)
        result.append(event)
        if position in shares:
            own_share = with_parts(events[last], shares[position])
            result.append(merge_response_events([*earlier.get(position, []), own_share]))
    return result


def _earlier_responses(
    events: Sequence[Event],
    owners: dict[tuple[int, int], int],
    shares: dict[int, list[Part]],
    first: int,
) -> dict[int, list[Event]]:
    """Owner position -> the earlier response events it owns, cut to its parts.

    An event between an owner and the last event contributes to an owner when
    it holds a response owned by it; it is cut to those responses plus, unless
    the event also holds calls, its non-response parts.
    """
    found: dict[int, list[Event]] = {}
    for position in range(first + 1, len(events) - 1):
        event = events[position]
        parts = parts_of(event)
        if not parts or not has_function_responses(event):
            continue
        mine = {
            owner
            for index, part in enumerate(parts)
            if part.function_response is not None
            and (owner := owners.get((position, index), -1)) in shares
        }
        is_call_event = has_function_calls(event)
        for owner in sorted(mine):
            matched = [
                part
                for index, part in enumerate(parts)
                if (
                    owners.get((position, index)) == owner
                    if part.function_response is not None
                    else not is_call_event
                )
            ]
            found.setdefault(owner, []).append(
                event if len(matched) == len(parts) else with_parts(event, matched)
            )
    return found


def _is_stale_text_reply(event: Event) -> bool:
    """Whether `event` is model chatter: a non-user model-role text reply without calls."""
    content = event.content
    return (
        content is not None
        and event.author != USER
        and content.role == "model"
        and not has_function_calls(event)
        and not is_summary(event)
        and any(part.text for part in parts_of(event))
    )


def _stale_runs(events: Sequence[Event]) -> list[int]:
    """For each position, the end (exclusive) of the run of stale replies starting there.

    A run is consecutive stale text replies of one invocation; a position
    that is no stale reply has run end equal to itself.
    """
    run_end = list(range(len(events)))
    for position in range(len(events) - 1, -1, -1):
        if not _is_stale_text_reply(events[position]):
            continue
        following = position + 1
        if (
            following < len(events)
            and run_end[following] > following
            and events[following].invocation_id == events[position].invocation_id
        ):
            run_end[position] = run_end[following]
        else:
            run_end[position] = following
    return run_end


def rearrange_async_responses(events: Sequence[Event]) -> list[Event]:
    """Every call event followed by the last response to each of its calls.

    A response is attributed to the newest call with its id in an earlier
    event (a response before every such call goes to the first); only events
    without responses count as call events, so the calls of an event that
    also holds responses are never matched and are pruned later (reference
    §8.7 [EDGE]). Response events leave their place; after a call event comes,
    for each of its calls, the last response event attributed to it, merged
    in position order when there are several.

    Before that, stale progress chatter goes: between two consecutive
    responses to one call from the same invocation and author (the earlier
    one requesting no confirmation or auth), a non-empty run made only of
    that invocation's non-user model text replies without calls is dropped.
    Deliberate ADK quirk (reference §14.14): this is positional, so a reply
    to something else in that span is dropped too.

    Example: ``call lr1, resp lr1=10%, "10% done", resp lr1=100%, "done"`` ->
    ``call lr1, resp lr1=100%, "done"``.
    """
    calls_by_id: dict[str | None, list[int]] = {}
    for position, event in enumerate(events):
        if has_function_responses(event):
            continue
        for call in function_calls(event):
            calls_by_id.setdefault(call.id, []).append(position)

    responses_by_call: dict[tuple[str | None, int], list[int]] = {}
    any_response = False
    for position, event in enumerate(events):
        for response in function_responses(event):
            any_response = True
            call_positions = calls_by_id.get(response.id)
            if not call_positions:
                continue
            before = bisect.bisect_left(call_positions, position)
            owner = call_positions[max(before - 1, 0)]
            responses_by_call.setdefault((response.id, owner), []).append(position)
    if not any_response:
        return list(events)

    stale = _stale_positions(events, responses_by_call)
    result: list[Event] = []
    for position, event in enumerate(events):
        if position in stale or has_function_responses(event):
            continue
        result.append(event)
        if not has_function_calls(event):
            continue
        answers = sorted(
            {
                answered[-1]
                for call in function_calls(event)
                if (answered := responses_by_call.get((call.id, position)))
            }
        )
        if len(answers) == 1:
            result.append(events[answers[0]])
        elif answers:
            result.append(merge_response_events([events[p] for p in answers]))
    return result


def _stale_positions(
    events: Sequence[Event], responses_by_call: dict[tuple[str | None, int], list[int]]
) -> set[int]:
    """Positions of the stale replies between consecutive responses to one call."""
    stale: set[int] = set()
    repeated = [answered for answered in responses_by_call.values() if len(answered) > 1]
    if not repeated:  # no call answered twice: no span to look in
        return stale
    run_end = _stale_runs(events)
    for answered in repeated:
        for earlier, later in itertools.pairwise(answered):
            first, second = events[earlier], events[later]
            if first.invocation_id != second.invocation_id or first.author != second.author:
                continue
            if first.actions.requested_tool_confirmations or first.actions.requested_auth_configs:
                continue
            start = earlier + 1
            # Deliberately positional (ADK quirk, §14.14): the run is dropped
            # even if a reply in it answered something else.
            if (
                start < later
                and events[start].invocation_id == first.invocation_id
                and run_end[start] >= later
            ):
                stale.update(range(start, later))
    return stale
