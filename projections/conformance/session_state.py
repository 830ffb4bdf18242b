"""Conformance runner for ``session_state`` vectors (§10, §11)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.fold.state import (
    REWIND_INVOCATION_PREFIX,
    append_event,
    build_rewind_event,
    create_session,
)
from schemas.event import Event

#: The vectors show the rewind event's (random) id as this.
REWIND_ID = "REWIND"


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """Create a session, append the events, maybe rewind, and report every state view."""
    stores = create_session(vector_input.get("initial_state") or {})
    state_after_create = stores.read_state()
    working = dict(state_after_create)
    appended: list[str] = []
    for data in vector_input["events"]:
        result = append_event(stores, working, Event.model_validate(data))
        stores, working = result.stores, result.working_state
        if result.stored:
            appended.append(result.event.id)
    rewind_shape: dict[str, Any] | None = None
    target = vector_input.get("rewind_before_invocation_id")
    if target is not None:
        latest = max((event.timestamp for event in stores.events), default=0.0)
        rewind = build_rewind_event(
            stores.events,
            working,
            target,
            event_id=REWIND_ID,
            invocation_suffix="rewind",
            timestamp=latest + 1.0,
        )
        result = append_event(stores, working, rewind)
        stores, working = result.stores, result.working_state
        rewind_shape = {
            "author": rewind.author,
            "rewind_before_invocation_id": rewind.actions.rewind_before_invocation_id,
            "state_delta": dict(rewind.actions.state_delta),
            "invocation_id_prefix": rewind.invocation_id[: len(REWIND_INVOCATION_PREFIX)],
        }
    probe = (
        create_session({}, stores).read_state() if vector_input.get("probe_new_session") else None
    )
    return {
        "state_after_create": state_after_create,
        "appended_event_ids": appended,
        "working_session_state": working,
        "stored_session_state": stores.read_state(),
        "app_state": dict(stores.app_state),
        "user_state": dict(stores.user_state),
        "stored_event_state_deltas": {
            event.id: dict(event.actions.state_delta) for event in stores.events
        },
        "rewind_event": rewind_shape,
        "new_session_state": probe,
    }
