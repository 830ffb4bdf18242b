"""Events that look wrong but are valid ADK events, which the pipeline must apply. Pure.

The counterpart of :mod:`tests.support.bad_records`: what a hostile caller can
send that is *not* malformed, so it is folded, never dead-lettered, exactly as
the independent rebuild folds it. A ``random.Random(seed)`` decides everything.

Example: ``hostile_valid_events(7, 20)`` -> 20 events, the first two ~1 MB.
"""

from __future__ import annotations

import random
from typing import Final

from schemas.codec import MAX_RECORD_BYTES
from tests.support.bad_records import Json, good_event

#: Nesting a state value may have: the record, the event, actions, stateDelta
#: and its key take five of :data:`schemas.json_bounds.MAX_DEPTH`'s 64 levels.
DEEPEST_VALID_STATE: Final = 60
#: Text that leaves a user event just under the record limit (the envelope's fields take the rest).
_NEAR_LIMIT_TEXT: Final = MAX_RECORD_BYTES - 1_000


def _nested_value(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth):
        value = {"x": value}
    return value


def hostile_valid_events(seed: int, count: int, *, near_limit: int = 2) -> list[Json]:
    """`count` events that look wrong but are valid ADK events, which the fold must apply.

    Orphan function responses, calls nothing answers, answers before their
    calls, a response answering an id twice (:mod:`projections.contents.call_pairing`
    drops or moves them as ADK does), state nested to the last level allowed,
    integers at the 64-bit edges, text of control, bidi and astral characters;
    and `near_limit` of them (the first) are text events just under the record limit.
    """
    rng = random.Random(seed)  # noqa: S311 - draws test records, not secrets
    shapes: list[tuple[str, Json]] = [
        ("user", {"functionResponse": {"id": "nobody-called", "name": "f", "response": {}}}),
        ("model", {"functionCall": {"id": "never-answered", "name": "f", "args": {}}}),
        ("user", {"functionResponse": {"name": "idless", "response": {"r": 1}}}),
        ("model", {"functionCall": {"id": "twice", "name": "g", "args": {"n": 1}}}),
        ("user", {"functionResponse": {"id": "twice", "name": "g", "response": {"r": 1}}}),
        ("user", {"functionResponse": {"id": "twice", "name": "g", "response": {"r": 2}}}),
        ("user", {"text": "nul \x00 bell \x07 rtl \u202e esc \x1b[31m astral \U0001f600"}),
    ]
    events = []
    for number in range(count):
        event = good_event(rng, 100_000 + number)
        if number < near_limit:
            event["content"] = {"role": "user", "parts": [{"text": "n" * _NEAR_LIMIT_TEXT}]}
            events.append(event)
            continue
        kind = rng.randrange(len(shapes) + 2)
        if kind == len(shapes):
            event["actions"] = {"stateDelta": {"deep": _nested_value(DEEPEST_VALID_STATE)}}
        elif kind == len(shapes) + 1:
            event["actions"] = {"stateDelta": {"big": 2**63 - 1, "small": -(2**63)}}
        else:
            role, part = shapes[kind]
            event.update(author="agent", content={"role": role, "parts": [part]})
        events.append(event)
    return events
