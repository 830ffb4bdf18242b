"""Drop the events annulled by rewinds (reference §3.1). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.event import Event


def drop_rewound(events: Sequence[Event]) -> list[Event]:
    """The live events: `events` without rewind events and the spans they annul.

    The first stream position of every invocation is taken over the whole
    input. Walking from the newest event back, a rewind event to invocation X
    is always dropped; when X first appears strictly before it, every event
    from X's first event up to the rewind event goes too, including rewinds
    inside that span (which therefore have no effect). A rewind to an unknown
    invocation, or to one that first appears after it, drops only itself.

    Example (stream order): ``a1 a2 b1 b2 R(b) c1`` -> ``a1 a2 c1``;
    ``a1 R(z) a2`` -> ``a1 a2``.

    Args:
        events: A session's events in stream order.

    Returns:
        The kept events, in stream order.
    """
    first_index: dict[str, int] = {}
    for index, event in enumerate(events):
        first_index.setdefault(event.invocation_id, index)
    kept: list[Event] = []
    index = len(events) - 1
    while index >= 0:
        event = events[index]
        target = event.actions.rewind_before_invocation_id
        if not target:
            kept.append(event)
            index -= 1
            continue
        start = first_index.get(target)
        index = start - 1 if start is not None and start < index else index - 1
    kept.reverse()
    return kept
