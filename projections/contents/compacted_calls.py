"""Restore calls that masking summarized away (reference §8.4). Pure: no I/O, no clock.

Masking hides raw events by timestamp, so a function response can stay
visible while the call it answers was summarized: typically a long-running
call compacted together with its interim response, its final result arriving
later. Left alone, that response would be an orphan and be pruned. This step
puts the call event back just before the first surviving response to it.

Needs global context: ownership of every response is read from the whole
pre-masking list, and "survives" means "is in the masked list".
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.contents.parts import function_calls, function_responses
from schemas.event import Event


def _ownership(
    source: Sequence[Event],
) -> tuple[dict[tuple[int, str], int], dict[tuple[int, str], list[int]]]:
    """Who owns what in `source`, by position.

    Returns:
        ``(owner, answers)``: ``owner[(response position, id)]`` is the position
        of the latest event with a call of that id, the response's own event
        included; ``answers[(call position, id)]`` lists the positions of the
        responses it owns.
    """
    owner: dict[tuple[int, str], int] = {}
    answers: dict[tuple[int, str], list[int]] = {}
    latest_call: dict[str, int] = {}
    for position, event in enumerate(source):
        # An event's own calls come before its responses: a response next to a
        # call with its id (a reused id) is owned by its own event, as in ADK.
        for call in function_calls(event):
            if call.id:
                latest_call[call.id] = position
        for response in function_responses(event):
            if response.id and (call_position := latest_call.get(response.id)) is not None:
                owner[(position, response.id)] = call_position
                answers.setdefault((call_position, response.id), []).append(position)
    return owner, answers


def recover_compacted_calls(masked: Sequence[Event], source: Sequence[Event]) -> list[Event]:
    """`masked` with summarized call events put back before their surviving responses.

    For every surviving response with an id, its owning call is the latest
    call with that id before it in `source` (the pre-masking list, stream
    order; a call in the response's own event counts as before it). When
    that call event is not in `masked` and not yet restored, the whole call
    event (all parts, verbatim) is inserted right before the first surviving
    response that refers to it, followed, for each other call of that event
    whose responses were all masked, by its latest response event (greatest
    timestamp, ties to the later one).

    Example: ``call c1 @101, interim c1 @102, S[100,102], final c1 @105``
    masks to ``S@102, final@105`` and recovers to ``S@102, call@101, final@105``.

    Args:
        masked: The output of masking; raw events are the same objects as in
            `source`.
        source: The filtered events masking was applied to, stream order.

    Returns:
        The masked list with the recovered events inserted.
    """
    position_of = {id(event): position for position, event in enumerate(source)}
    surviving = {position_of[id(e)] for e in masked if id(e) in position_of}
    owner, answers = _ownership(source)

    result: list[Event] = []
    restored: set[int] = set()
    inserted: set[int] = set()
    for event in masked:
        position = position_of.get(id(event))
        if position is not None:
            for response in function_responses(event):
                call_position = owner.get((position, response.id or ""))
                if call_position is None or call_position in surviving or call_position in restored:
                    continue
                restored.add(call_position)
                result.append(source[call_position])
                for sibling in _sibling_responses(source, call_position, answers, surviving):
                    if sibling not in inserted:
                        inserted.add(sibling)
                        result.append(source[sibling])
        result.append(event)
    return result


def _sibling_responses(
    source: Sequence[Event],
    call_position: int,
    answers: dict[tuple[int, str], list[int]],
    surviving: set[int],
) -> list[int]:
    """Latest response of each call of the event whose responses were all masked."""
    chosen: list[int] = []
    for call in function_calls(source[call_position]):
        responses = answers.get((call_position, call.id or ""), [])
        if not responses or any(p in surviving for p in responses):
            continue
        latest = max(responses, key=lambda p: (source[p].timestamp, p))
        if latest not in chosen:
            chosen.append(latest)
    return chosen
