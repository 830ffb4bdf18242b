"""The mark of a creation record: the pipeline's bookkeeping event that creates its session.

A creation is an event on `events` like a deletion record: author
``ctxstream``, no content, not partial, ``true`` under
``ctxstream.session_created`` in its custom metadata, and at most one action,
``stateDelta``: the session's initial state (``temp:`` keys already dropped)::

    {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
     "actions": {"stateDelta": {"topic": "trains"}},
     "customMetadata": {"ctxstream": {"session_created": true}}}

It travels with ``expected_offset = -1`` ("only if the session has no writer
record"), so of concurrent creates one is applied and the others refused. The
envelope's validation refuses any other shape (:func:`creation_problem`), so a
malformed one is dead-lettered when decoded. Folding it: projections/README.md,
"Conditional records".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from schemas.bookkeeping import AUTHOR, NAMESPACE, flag_problem
from schemas.event import Event, EventActions

#: The key of the mark under the pipeline's custom-metadata namespace.
CREATION_KEY: Final = "session_created"
#: The prefix of state keys that live for one invocation only: never in a creation record.
TEMP: Final = "temp:"
#: The expected offset every creation record carries: "the session has no writer record".
CREATION_EXPECTED_OFFSET: Final = -1


def names_creation(event: Event) -> bool:
    """Whether `event` names the creation key at all (well formed or not)."""
    ours = (event.custom_metadata or {}).get(NAMESPACE)
    return isinstance(ours, dict) and CREATION_KEY in ours


def creation_problem(event: Event) -> str | None:
    """Why `event`, which names the creation key, is no creation record; None when it is one.

    Example: an event by ``user`` -> ``"a creation record's author is 'ctxstream',
    got 'user'"``; one that also transfers -> ``"a creation record carries no
    action but stateDelta (it also carries transferToAgent)"``.
    """
    problem = flag_problem(event, CREATION_KEY, "creation")
    if problem is not None:
        return problem
    if event.author != AUTHOR:
        return f"a creation record's author is {AUTHOR!r}, got {event.author!r}"
    if event.content is not None or event.partial:
        return "a creation record has no content and is not partial"
    actions = event.actions.model_dump(by_alias=True, exclude_defaults=True, exclude_none=True)
    if extra := sorted(name for name in actions if name != "stateDelta"):
        return (
            "a creation record carries no action but stateDelta "
            f"(it also carries {', '.join(extra)})"
        )
    if temporary := sorted(key for key in event.actions.state_delta if key.startswith(TEMP)):
        return f"a creation record's stateDelta holds no {TEMP} key (it holds {temporary[0]!r})"
    return None


def is_creation(event: Event) -> bool:
    """Whether `event` is a well-formed creation record."""
    return names_creation(event) and creation_problem(event) is None


def creation_event(*, event_id: str, timestamp: float, state: Mapping[str, object]) -> Event:
    """The creation record's event, as the module docstring shows it (no ``actions`` if empty).

    `state` must already be JSON values without ``temp:`` keys.
    """
    mark = {NAMESPACE: {CREATION_KEY: True}}
    if not state:
        return Event(id=event_id, author=AUTHOR, timestamp=timestamp, custom_metadata=mark)
    return Event(
        id=event_id,
        author=AUTHOR,
        timestamp=timestamp,
        actions=EventActions(state_delta=dict(state)),
        custom_metadata=mark,
    )
