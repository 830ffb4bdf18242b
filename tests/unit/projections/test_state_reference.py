"""Session state on append and on rewind (reference §10, §11), from the reference text.

Scenarios run either directly or as vector-shaped inputs through the
conformance adapter; expected values are worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.conformance.session_state import run as run_state_vector
from projections.fold.state import (
    RewindTargetNotFoundError,
    SessionStores,
    append_event,
    build_rewind_event,
    create_session,
    rewind_state_delta,
)
from schemas.event import Event, event_to_json


def _delta(event_id: str, invocation_id: str, delta: dict[str, Any], **fields: Any) -> Event:
    return Event.model_validate(
        {
            "id": event_id,
            "invocation_id": invocation_id,
            "author": "agent",
            "timestamp": 100,
            "actions": {"state_delta": delta},
            **fields,
        }
    )


# --------------------------------------------------------------------------- §11 append


def test_temp_keys_reach_working_state_only() -> None:
    stores = create_session({"temp:boot": 1, "mode": "x"})
    assert stores.read_state() == {"mode": "x"}
    result = append_event(stores, stores.read_state(), _delta("e1", "inv1", {"temp:t": 2, "n": 1}))
    assert result.stored
    assert result.working_state == {"mode": "x", "temp:t": 2, "n": 1}
    assert dict(result.event.actions.state_delta) == {"n": 1}
    assert dict(result.stores.events[0].actions.state_delta) == {"n": 1}
    assert result.stores.read_state() == {"mode": "x", "n": 1}


def test_partial_event_is_neither_stored_nor_applied() -> None:
    stores = create_session({})
    partial = _delta("p", "inv1", {"n": 1, "app:a": 1}, partial=True)
    result = append_event(stores, {}, partial)
    assert not result.stored
    assert result.event is partial
    assert result.working_state == {}
    assert result.stores.events == ()
    assert result.stores.read_state() == {}


def test_equal_redelivery_is_ignored_but_changed_event_with_same_id_is_not() -> None:
    stores = create_session({})
    first = append_event(stores, {}, _delta("e1", "inv1", {"n": 1}))
    again = append_event(first.stores, first.working_state, _delta("e1", "inv1", {"n": 1}))
    assert not again.stored
    assert len(again.stores.events) == 1
    changed = append_event(again.stores, again.working_state, _delta("e1", "inv1", {"n": 2}))
    assert changed.stored
    assert changed.stores.read_state() == {"n": 2}


def test_prefixed_keys_go_to_their_stores_and_none_is_a_value() -> None:
    stores = create_session({"app:v": 1, "user:l": "en"})
    delta = {"app:v": None, "user:l": None, "k": None, "app:new": 2}
    result = append_event(stores, stores.read_state(), _delta("e1", "inv1", delta))
    after = result.stores
    assert dict(after.app_state) == {"v": None, "new": 2}
    assert dict(after.user_state) == {"l": None}
    assert dict(after.session_state) == {"k": None}
    assert after.read_state() == {"k": None, "app:v": None, "app:new": 2, "user:l": None}
    probe = create_session({}, after)
    assert probe.read_state() == {"app:v": None, "app:new": 2, "user:l": None}


# --------------------------------------------------------------------------- §10 rewind


def _stored(*events: Event) -> SessionStores:
    stores = create_session({})
    working: dict[str, Any] = {}
    for event in events:
        result = append_event(stores, working, event)
        stores, working = result.stores, result.working_state
    return stores


def test_rewind_replay_skips_prefixed_keys_and_none_deletes() -> None:
    stores = _stored(
        _delta("e1", "inv1", {"a": 1, "d": 4, "app:g": 1, "user:u": 1}),
        _delta("e2", "inv1", {"a": None, "same": 7}),
        _delta("e3", "inv2", {"a": 5, "d": 6, "app:g": 2}),
    )
    current = stores.read_state()
    assert current == {"a": 5, "d": 6, "same": 7, "app:g": 2, "user:u": 1}
    # Replay: a deleted by None, d = 4, same = 7 (unchanged: omitted);
    # a is absent from the replay -> None; app:/user: untouched.
    assert rewind_state_delta(stores.events, current, "inv2") == {"d": 4, "a": None}


def test_rewind_replays_earlier_rewind_events() -> None:
    stores = _stored(_delta("e1", "inv1", {"a": 1}), _delta("e2", "inv2", {"a": 2}))
    first = build_rewind_event(
        stores.events,
        stores.read_state(),
        "inv2",
        event_id="r1",
        invocation_suffix="x",
        timestamp=1,
    )
    assert dict(first.actions.state_delta) == {"a": 1}
    stores = append_event(stores, stores.read_state(), first).stores
    stores = append_event(
        stores, stores.read_state(), _delta("e3", "inv3", {"a": 3, "b": 1})
    ).stores
    # Replay before inv3: e1 a=1, e2 a=2, r1 a=1.
    delta = rewind_state_delta(stores.events, stores.read_state(), "inv3")
    assert delta == {"a": 1, "b": None}


def test_rewind_event_shape_and_unknown_invocation() -> None:
    stores = _stored(_delta("e1", "inv1", {"a": 1}), _delta("e2", "inv2", {"a": 2}))
    event = build_rewind_event(
        stores.events,
        stores.read_state(),
        "inv2",
        event_id="rw",
        invocation_suffix="abc",
        timestamp=5,
        artifact_delta={"f.txt": 0},
    )
    assert (event.author, event.invocation_id, event.id) == ("user", "e-abc", "rw")
    assert event.actions.rewind_before_invocation_id == "inv2"
    assert dict(event.actions.state_delta) == {"a": 1}
    assert dict(event.actions.artifact_delta) == {"f.txt": 0}
    with pytest.raises(RewindTargetNotFoundError):
        rewind_state_delta(stores.events, stores.read_state(), "nope")


def test_session_state_vector_with_rewind_and_probe() -> None:
    events = [
        _delta("e1", "inv1", {"a": 1, "app:g": 1, "user:u": 1}),
        _delta("e2", "inv1", {"p": 1}, partial=True),
        _delta("e3", "inv2", {"a": 2, "b": None, "user:u": 2}),
        _delta("e3", "inv2", {"a": 2, "b": None, "user:u": 2}),
    ]
    result = run_state_vector(
        {
            "initial_state": {"init": 0, "app:v": 1, "temp:boot": True},
            "events": [event_to_json(e) for e in events],
            "rewind_before_invocation_id": "inv2",
            "probe_new_session": True,
        }
    )
    rewind_delta = {"a": 1, "b": None, "init": None}
    assert result == {
        "state_after_create": {"init": 0, "app:v": 1},
        "appended_event_ids": ["e1", "e3"],
        "working_session_state": {
            "init": None,
            "a": 1,
            "b": None,
            "app:v": 1,
            "app:g": 1,
            "user:u": 2,
        },
        "stored_session_state": {
            "init": None,
            "a": 1,
            "b": None,
            "app:v": 1,
            "app:g": 1,
            "user:u": 2,
        },
        "app_state": {"v": 1, "g": 1},
        "user_state": {"u": 2},
        "stored_event_state_deltas": {
            "e1": {"a": 1, "app:g": 1, "user:u": 1},
            "e3": {"a": 2, "b": None, "user:u": 2},
            "REWIND": rewind_delta,
        },
        "rewind_event": {
            "author": "user",
            "rewind_before_invocation_id": "inv2",
            "state_delta": rewind_delta,
            "invocation_id_prefix": "e-",
        },
        "new_session_state": {"app:v": 1, "app:g": 1, "user:u": 2},
    }


def test_session_state_vector_temp_keys_without_rewind() -> None:
    events = [_delta("e1", "inv1", {"temp:t": 1, "k": 1}), _delta("e2", "inv1", {"temp:t": 2})]
    result = run_state_vector(
        {
            "initial_state": {},
            "events": [event_to_json(e) for e in events],
            "rewind_before_invocation_id": None,
        }
    )
    assert result["working_session_state"] == {"temp:t": 2, "k": 1}
    assert result["stored_session_state"] == {"k": 1}
    assert result["stored_event_state_deltas"] == {"e1": {"k": 1}, "e2": {}}
    assert result["rewind_event"] is None
    assert result["new_session_state"] is None
