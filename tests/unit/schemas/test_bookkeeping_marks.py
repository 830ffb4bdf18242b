"""Memory and deletion marks refused with the exact reason, and their bounds, by hand.

Each expected message is written out here; a malformed mark is never taken for one.
"""

from __future__ import annotations

from typing import Any

import pytest

from schemas.deletion_mark import deletion_problem, is_deletion
from schemas.event import MAX_ID_CHARS, Event
from schemas.memory_mark import (
    MAX_MEMORY_IDS,
    MemoryMark,
    is_memory_mark,
    memory_mark,
    memory_mark_problem,
)


def marked(ours: Any, **fields: Any) -> Event:
    """A bookkeeping-shaped event whose ``ctxstream`` custom metadata is `ours`."""
    data = {"id": "m1", "author": "ctxstream", "timestamp": 1.0, "customMetadata": ours}
    data.update(fields)
    return Event.model_validate(data)


def test_memory_ids_are_one_to_the_maximum_each_one_to_the_longest_id() -> None:
    at_most = ["e"] * MAX_MEMORY_IDS
    assert (
        memory_mark_problem(marked({"ctxstream": {"memory": {"action": "add", "ids": at_most}}}))
        is None
    )
    over = marked({"ctxstream": {"memory": {"action": "add", "ids": [*at_most, "e"]}}})
    assert memory_mark_problem(over) == (
        f"ctxstream.memory.ids must be a list of 1 to {MAX_MEMORY_IDS} ids"
    )
    for good in ("e", "x" * MAX_ID_CHARS):
        event = marked({"ctxstream": {"memory": {"action": "delete", "ids": [good]}}})
        assert memory_mark(event) == MemoryMark("delete", frozenset({good}))
    for bad in ("", "x" * (MAX_ID_CHARS + 1)):
        event = marked({"ctxstream": {"memory": {"action": "delete", "ids": ["ok", bad]}}})
        assert memory_mark_problem(event) == (
            "ctxstream.memory.ids[1] must be a non-empty string of at most "
            f"{MAX_ID_CHARS} characters"
        )
        assert memory_mark(event) is None


def test_a_malformed_memory_mark_is_refused_with_its_reason_and_is_no_mark() -> None:
    cases: list[tuple[Any, dict[str, Any], str]] = [
        (
            {"ctxstream": {"memory": {"action": "add", "why": 1, "also": 2}}},
            {},
            "ctxstream.memory names only action and ids, not also, why",
        ),
        (
            {"ctxstream": {"memory": {"action": "forget"}}},
            {},
            "ctxstream.memory.action must be 'add' or 'delete', got 'forget'",
        ),
        (
            {"ctxstream": {"memory": {"action": "add"}, "b": 1, "a": 2}},
            {},
            "a memory record names nothing else under ctxstream (it also names a, b)",
        ),
        (
            {"ctxstream": {"memory": {"action": "add"}}},
            {"actions": {"stateDelta": {"k": 1}}},
            "a memory record carries no actions",
        ),
        (
            {"ctxstream": {"memory": {"action": "add"}}},
            {"author": "user"},
            "a memory record's author is 'ctxstream', got 'user'",
        ),
        ({"ctxstream": {"other": 1}}, {}, "it names no ctxstream.memory"),
    ]
    for ours, fields, reason in cases:
        event = marked(ours, **fields)
        assert memory_mark_problem(event) == reason
        assert memory_mark(event) is None
        assert not is_memory_mark(event)


def test_a_malformed_deletion_mark_is_refused_with_its_reason_and_is_no_deletion() -> None:
    cases: list[tuple[Any, dict[str, Any], str]] = [
        ({"ctxstream": {"other": 1}}, {}, "it names no ctxstream.session_deleted"),
        (
            {"ctxstream": {"session_deleted": True, "z": 1, "y": 2}},
            {},
            "a deletion record names nothing else under ctxstream (it also names y, z)",
        ),
        (
            {"ctxstream": {"session_deleted": True}},
            {"actions": {"stateDelta": {"k": 1}}},
            "a deletion record carries no actions",
        ),
        (
            {"ctxstream": {"session_deleted": True}},
            {"author": "user"},
            "a deletion record's author is 'ctxstream', got 'user'",
        ),
    ]
    for ours, fields, reason in cases:
        event = marked(ours, **fields)
        assert deletion_problem(event) == reason
        assert not is_deletion(event)
    assert is_deletion(marked({"ctxstream": {"session_deleted": True}}))


@pytest.mark.parametrize("empty", [None, {}])
def test_actions_left_at_their_defaults_or_none_are_no_actions(empty: Any) -> None:
    fields = {} if empty is None else {"actions": empty}
    assert (
        memory_mark_problem(marked({"ctxstream": {"memory": {"action": "add"}}}, **fields)) is None
    )
