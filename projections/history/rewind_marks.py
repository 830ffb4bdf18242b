"""Which applied records rewinds annul, and which rewinds take effect (reference §3.1). Pure.

The walk of §3.1 over the applied records, stream order: from the newest
back, a rewind to invocation X is always dropped; when X's first record lies
strictly before it, every record from there up to the rewind is annulled,
rewinds among them included (they take no effect). Unlike
:func:`projections.fold.rewind.drop_rewound`, it says which dropped records
are rewinds and which are annulled, since a row stores the difference.

Example (stream order): ``a1 b1 R(b) c1`` -> ``None rewound rewind None``;
``a1 b1 R(a) R(b)`` -> ``None rewound rewound rewind``: R(b) annuls R(a), so
a1 is live again.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.history.event_status import EventStatus


def rewind_marks(
    invocation_ids: Sequence[str], targets: Sequence[str | None]
) -> list[EventStatus | None]:
    """Per applied record: ``rewind``, ``rewound``, or None for a record rewinds leave live.

    Args:
        invocation_ids: Each applied record's invocation id, stream order.
        targets: Each one's ``rewind_before_invocation_id`` (None or ``""``: no rewind).
    """
    first: dict[str, int] = {}
    for position, invocation_id in enumerate(invocation_ids):
        first.setdefault(invocation_id, position)
    marks: list[EventStatus | None] = [None] * len(invocation_ids)
    walked_to = len(invocation_ids)  # the records from here on are annulled or passed
    for position in reversed(range(len(invocation_ids))):
        target = targets[position]
        if not target or position >= walked_to:
            continue
        marks[position] = EventStatus.REWIND
        start = first.get(target, position)  # an unknown target annuls nothing
        for annulled in range(start, position):  # none unless the target starts before
            marks[annulled] = EventStatus.REWOUND
        walked_to = min(walked_to, start)
    return marks
