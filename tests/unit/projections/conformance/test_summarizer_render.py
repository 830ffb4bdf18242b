"""The summarizer-render runner (``projections/conformance/summarizer_render.py``).

The new summary needs an invocation id no window event uses (the vectors
record only that it is fresh): ``summary-invocation``, with ``-1`` appended
while the window uses it.
"""

from __future__ import annotations

from projections.conformance.summarizer_render import _fresh_invocation_id, run
from tests.support.events import text_event
from tests.support.vectors import text_content, vector_event


def test_the_summary_invocation_is_named_summary_invocation_when_unused() -> None:
    assert _fresh_invocation_id([]) == "summary-invocation"
    assert _fresh_invocation_id([text_event("e1", "inv1", 1.0)]) == "summary-invocation"


def test_a_used_name_is_extended_until_it_is_unused() -> None:
    events = [
        text_event("e1", "summary-invocation", 1.0),
        text_event("e2", "summary-invocation-1", 2.0),
    ]
    assert _fresh_invocation_id(events) == "summary-invocation-1-1"


def test_a_window_of_the_invocation_named_like_the_summary_still_gets_a_fresh_one() -> None:
    events = [
        vector_event("e1", "summary-invocation", "user", 1.0, text_content("user", "hi")),
        vector_event("e2", "summary-invocation", "agent", 2.0, text_content("model", "hello")),
    ]
    shape = run({"events": events})["summary_event"]
    assert shape is not None
    assert shape["invocation_id_is_fresh"] is True


# Built before the test runs: the test is nothing but the call, so it is among the first a
# mutation run tries, and a search that never stops on it fails at once instead.
_TAKEN = [text_event("e1", "summary-invocation", 1.0)]


def test_the_summary_invocation_taken_gets_one_suffix() -> None:
    assert _fresh_invocation_id(_TAKEN) == "summary-invocation-1"
