from __future__ import annotations

from typing import Any

import pytest

from projections.fold.state import (
    RewindTargetNotFoundError,
    SessionStores,
    append_event,
    build_rewind_event,
    create_session,
    persist_delta,
    rewind_state_delta,
)
from schemas.event import Event


def _delta_event(event_id: str, inv: str, delta: dict[str, Any], **fields: Any) -> Event:
    data: dict[str, Any] = {
        "id": event_id,
        "invocation_id": inv,
        "author": "agent",
        "timestamp": 1.0,
        "actions": {"state_delta": delta},
    }
    data.update(fields)
    return Event.model_validate(data)


def test_create_drops_temp_and_splits_scopes() -> None:
    stores = create_session({"temp:t": 1, "app:a": 2, "user:u": 3, "k": 4})
    assert dict(stores.app_state) == {"a": 2}
    assert dict(stores.user_state) == {"u": 3}
    assert stores.read_state() == {"app:a": 2, "user:u": 3, "k": 4}


def test_temp_keys_reach_working_state_but_not_the_stored_event() -> None:
    stores = create_session({})
    result = append_event(stores, {}, _delta_event("e1", "i", {"n": 1, "temp:t": 2}))
    assert result.working_state == {"n": 1, "temp:t": 2}
    assert result.event.actions.state_delta == {"n": 1}
    assert result.stores.events[0].actions.state_delta == {"n": 1}
    assert result.stores.read_state() == {"n": 1}


def test_partial_event_is_neither_stored_nor_applied() -> None:
    stores = create_session({})
    result = append_event(stores, {}, _delta_event("e1", "i", {"n": 1}, partial=True))
    assert not result.stored
    assert result.working_state == {}
    assert result.stores.events == ()


def test_equal_redelivery_is_ignored_but_same_id_with_other_fields_is_stored() -> None:
    stores = create_session({})
    first = append_event(stores, {}, _delta_event("e1", "i", {"n": 1}))
    again = append_event(first.stores, {"n": 5}, _delta_event("e1", "i", {"n": 1}))
    assert not again.stored
    assert again.working_state == {"n": 5}
    changed = append_event(first.stores, {}, _delta_event("e1", "i", {"n": 2}))
    assert changed.stored
    assert len(changed.stores.events) == 2


def test_none_is_stored_as_a_value() -> None:
    stores = create_session({"k": 1})
    result = append_event(stores, {"k": 1}, _delta_event("e1", "i", {"k": None, "user:u": None}))
    assert result.stores.read_state() == {"k": None, "user:u": None}


def test_new_session_sees_app_and_user_stores() -> None:
    stores = append_event(create_session({}), {}, _delta_event("e", "i", {"app:a": 1, "s": 2}))
    probe = create_session({"own": 3}, stores.stores)
    assert probe.read_state() == {"own": 3, "app:a": 1}
    assert probe.events == ()


def test_rewind_replay_skips_prefixes_and_none_deletes() -> None:
    events = [
        _delta_event("e1", "i1", {"a": 1, "b": 1, "app:x": 1, "temp:t": 1}),
        _delta_event("e2", "i2", {"b": None}),
        _delta_event("e3", "i3", {"a": 9, "b": 3}),
    ]
    current = {"a": 9, "b": 3, "app:x": 1, "user:y": 2}
    assert rewind_state_delta(events, current, "i3") == {"a": 1, "b": None}
    assert rewind_state_delta(events, current, "i2") == {"a": 1, "b": 1}


def test_rewind_keeps_keys_whose_value_is_unchanged_out_of_the_delta() -> None:
    events = [_delta_event("e1", "i1", {"a": 1}), _delta_event("e2", "i2", {"c": 2})]
    assert rewind_state_delta(events, {"a": 1, "c": 2, "init": 0}, "i2") == {
        "c": None,
        "init": None,
    }


def test_rewind_to_unknown_invocation_raises() -> None:
    with pytest.raises(RewindTargetNotFoundError, match="'missing'"):
        rewind_state_delta([_delta_event("e1", "i1", {})], {}, "missing")


def test_rewind_event_shape() -> None:
    events = [_delta_event("e1", "i1", {"a": 1}), _delta_event("e2", "i2", {"a": 2})]
    event = build_rewind_event(
        events, {"a": 2}, "i2", event_id="r", invocation_suffix="1234", timestamp=9.0
    )
    assert event.invocation_id == "e-1234"
    assert event.author == "user"
    assert event.actions.rewind_before_invocation_id == "i2"
    assert event.actions.state_delta == {"a": 1}
    stores = append_event(SessionStores(events=tuple(events)), {"a": 2}, event)
    assert stores.working_state == {"a": 1}


def test_persisting_a_delta_keeps_the_stored_events() -> None:
    stored = (_delta_event("e1", "i1", {"a": 1}),)
    stores = persist_delta(SessionStores(events=stored), {"b": 2})
    assert stores.events == stored
    assert stores.session_state == {"b": 2}


def test_a_partial_or_redelivered_event_is_reported_as_not_stored() -> None:
    event = _delta_event("e1", "i1", {"a": 1})
    stores = append_event(SessionStores(), {}, event).stores
    assert append_event(stores, {}, event).stored is False
    partial = _delta_event("e2", "i1", {"a": 2}, partial=True)
    assert append_event(stores, {}, partial).stored is False


def test_rewind_replays_the_keys_after_a_prefixed_one_in_the_same_delta() -> None:
    events = [
        _delta_event("e1", "i1", {"app:x": 1, "user:y": 2, "temp:z": 3, "a": 1}),
        _delta_event("e2", "i2", {"a": 2}),
    ]
    assert rewind_state_delta(events, {"a": 2}, "i2") == {"a": 1}


def test_rewind_deleting_a_key_never_set_is_no_error() -> None:
    events = [_delta_event("e1", "i1", {"a": None, "b": 1}), _delta_event("e2", "i2", {"b": 2})]
    assert rewind_state_delta(events, {"b": 2}, "i2") == {"b": 1}


def test_an_unknown_invocation_is_named_by_the_error() -> None:
    with pytest.raises(RewindTargetNotFoundError) as raised:
        rewind_state_delta([_delta_event("e1", "i1", {"a": 1})], {}, "nowhere")
    assert raised.value.invocation_id == "nowhere"
