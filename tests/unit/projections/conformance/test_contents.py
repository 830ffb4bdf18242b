"""The contents runner (``projections/conformance/contents.py``) on hand-made vectors.

The recorded vectors always name ``include_contents`` and are never scoped;
these leave the option out (default mode) and scope the request. Expected
contents are worked out by hand from the reference (§8, §8.9).
"""

from __future__ import annotations

from projections.conformance.contents import run
from tests.support.vectors import Json, text_content, vector_event


def _delegation() -> list[Json]:
    """A coordinator delegating to ``helper`` under call ``call-7``, and helper's scoped reply."""
    call = {"functionCall": {"id": "call-7", "name": "helper", "args": {"task": "count"}}}
    return [
        vector_event("e1", "inv1", "user", 1.0, text_content("user", "delegate please")),
        vector_event("e2", "inv1", "coordinator", 2.0, {"parts": [call], "role": "model"}),
        vector_event(
            "e3", "inv1", "helper", 3.0, text_content("model", "counting"), isolationScope="call-7"
        ),
    ]


def test_without_options_the_whole_history_is_assembled_for_no_agent() -> None:
    events = [
        vector_event("e1", "inv1", "user", 1.0, text_content("user", "hi")),
        vector_event("e2", "inv1", "agent", 2.0, text_content("model", "hello")),
    ]
    assert run({"events": events}) == {
        "contents": [
            {"parts": [{"text": "hi"}], "role": "user"},
            {"parts": [{"text": "hello"}], "role": "model"},
        ]
    }


def test_a_scoped_request_sees_its_scope_after_the_delegated_task() -> None:
    vector = {"events": _delegation(), "agent_name": "helper", "isolation_scope": "call-7"}
    assert run(vector) == {
        "contents": [
            {"parts": [{"text": '{"task": "count"}'}], "role": "user"},
            {"parts": [{"text": "counting"}], "role": "model"},
        ]
    }
