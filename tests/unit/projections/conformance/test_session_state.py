"""The session-state runner (``projections/conformance/session_state.py``) on hand-made vectors.

The recorded vectors rewind only to an invocation the session holds; these
rewind a session that holds no event at all, which the runner reports as the
rewind's own refusal (what the report then shows as the vector's ``error``).
"""

from __future__ import annotations

import pytest

from projections.conformance.session_state import run
from projections.fold.state import RewindTargetNotFoundError


def test_a_rewind_of_a_session_without_events_is_refused_naming_the_invocation() -> None:
    with pytest.raises(RewindTargetNotFoundError) as refused:
        run({"events": [], "rewind_before_invocation_id": "inv1"})
    assert str(refused.value) == "invocation not found: 'inv1'"


def test_a_rewind_to_an_unknown_invocation_is_refused_likewise() -> None:
    events = [
        {"id": "e1", "invocationId": "inv1", "author": "user", "timestamp": 5.0},
    ]
    with pytest.raises(RewindTargetNotFoundError) as refused:
        run({"events": events, "rewind_before_invocation_id": "inv9"})
    assert str(refused.value) == "invocation not found: 'inv9'"
