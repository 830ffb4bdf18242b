"""The state a session's events write: partial chunks write nothing."""

from __future__ import annotations

from pyrsistent import pmap

from projections.fold.scoped_state import ScopedState, apply_state_delta
from tests.support.events import text_event


def test_a_partial_chunk_writes_no_state() -> None:
    chunk = text_event(
        "p1", "i1", 100.0, "par", author="agent", partial=True, actions={"state_delta": {"n": 1}}
    )
    assert apply_state_delta(ScopedState(), chunk) == ScopedState()
    final = text_event("a1", "i1", 101.0, "all", author="agent", actions={"state_delta": {"n": 1}})
    assert apply_state_delta(ScopedState(), final) == ScopedState(session=pmap({"n": 1}))
