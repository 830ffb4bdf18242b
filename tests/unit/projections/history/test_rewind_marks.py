"""The rewind walk of §3.1 on its own: small inputs with their marks worked out by hand.

The walk moves a position back through the records; a slip in that arithmetic
loops or skips a rewind. The cases run in one test, in this order, so a walk
that runs off the end or loops fails on an early case at once (the one-record
input, then a rewind the walk must not see twice) instead of looping on a later
one: parametrized, a mutation run could order a looping case first.
"""

from __future__ import annotations

from typing import Final

from projections.history.event_status import EventStatus
from projections.history.rewind_marks import rewind_marks

REWOUND, REWIND = EventStatus.REWOUND, EventStatus.REWIND

#: (invocation ids, rewind targets, expected marks), stream order.
CASES: Final[list[tuple[list[str], list[str | None], list[EventStatus | None]]]] = [
    # One record, none: the walk ends after it.
    (["a"], [None], [None]),
    ([], [], []),
    (["a", "b", "c"], [None, "", None], [None, None, None]),
    # R2 annuls a1..b1, the rewind R1 among them; nothing is left before a1.
    (["a", "r1", "b", "r2"], [None, "zz", None, "a"], [REWOUND, REWOUND, REWOUND, REWIND]),
    # R2 annuls b1 only; the walk goes on at R1, just before b1: a rewind of its own.
    (["x", "r1", "b", "r2"], [None, "zz", None, "b"], [None, REWIND, REWOUND, REWIND]),
    # R(zz) annuls nothing; R(a) just before it still annuls a1 and b1.
    (["a", "b", "r1", "r2"], [None, None, "a", "zz"], [REWOUND, REWOUND, REWIND, REWIND]),
    # A rewind whose target starts at the rewind itself annuls nothing before it.
    (["a", "b"], [None, "b"], [None, REWIND]),
    # The module's examples.
    (["a", "b", "r", "c"], [None, None, "b", None], [None, REWOUND, REWIND, None]),
    (["a", "b", "r1", "r2"], [None, None, "a", "b"], [None, REWOUND, REWOUND, REWIND]),
]


def test_the_marks_of_small_inputs_worked_out_by_hand() -> None:
    for invocation_ids, targets, expected in CASES:
        assert rewind_marks(invocation_ids, targets) == expected, (invocation_ids, targets)
