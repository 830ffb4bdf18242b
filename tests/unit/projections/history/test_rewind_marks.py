"""The rewind walk of §3.1 on its own: small inputs with their marks worked out by hand.

The walk goes back through the records and passes over what a rewind annuls;
a slip in where it goes on skips a rewind or walks an annulled one.
"""

from __future__ import annotations

from typing import Final

import pytest

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
    # R(b) annuls R(a), the first record of its target b: R(a) is never walked, a1 stays.
    (["a", "b", "x"], [None, "a", "b"], [None, REWOUND, REWIND]),
    # A rewind whose target starts at the rewind itself annuls nothing before it.
    (["a", "b"], [None, "b"], [None, REWIND]),
    # The module's examples.
    (["a", "b", "r", "c"], [None, None, "b", None], [None, REWOUND, REWIND, None]),
    (["a", "b", "r1", "r2"], [None, None, "a", "b"], [None, REWOUND, REWOUND, REWIND]),
]


@pytest.mark.parametrize(("invocation_ids", "targets", "expected"), CASES)
def test_the_marks_of_small_inputs_worked_out_by_hand(
    invocation_ids: list[str], targets: list[str | None], expected: list[EventStatus | None]
) -> None:
    assert rewind_marks(invocation_ids, targets) == expected
