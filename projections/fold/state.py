"""Session state scopes, append semantics and rewind state deltas (reference §10, §11).

Pure: no I/O, no clock. Values are returned, never mutated in place; where ADK
mutates the appended event (``temp:`` keys removed from its delta), the
stored copy is returned instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from schemas.event import Event, EventActions

APP_PREFIX: Final = "app:"
USER_PREFIX: Final = "user:"
TEMP_PREFIX: Final = "temp:"
PREFIXES: Final = (APP_PREFIX, USER_PREFIX, TEMP_PREFIX)
#: Rewind events' invocation ids are ``e-`` plus a fresh suffix.
REWIND_INVOCATION_PREFIX: Final = "e-"

State = dict[str, Any]


class RewindTargetNotFoundError(LookupError):
    """A rewind names an invocation with no stored event; retrying cannot help."""

    def __init__(self, invocation_id: str) -> None:
        super().__init__(f"invocation not found: {invocation_id!r}")
        self.invocation_id = invocation_id


@dataclass(frozen=True, slots=True)
class SessionStores:
    """What the session service persists for one session, its app and its user.

    Attributes:
        app_state: App-wide keys, prefix stripped.
        user_state: Keys of the (app, user), prefix stripped.
        session_state: The session's own keys (no prefix).
        events: Stored events, stream order.
    """

    app_state: Mapping[str, Any] = field(default_factory=dict)
    user_state: Mapping[str, Any] = field(default_factory=dict)
    session_state: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Event, ...] = ()

    def read_state(self) -> State:
        """The state a freshly read session shows: own keys plus ``app:``/``user:`` stores."""
        merged = dict(self.session_state)
        merged.update({APP_PREFIX + key: value for key, value in self.app_state.items()})
        merged.update({USER_PREFIX + key: value for key, value in self.user_state.items()})
        return merged


@dataclass(frozen=True, slots=True)
class SessionAppend:
    """The outcome of appending one event.

    Attributes:
        stores: The persisted stores afterwards.
        working_state: The caller's live session state afterwards (``temp:``
            keys included).
        event: The event as returned to the caller (``temp:`` keys removed
            from its delta when it was stored).
        stored: Whether the event entered the session.
    """

    stores: SessionStores
    working_state: State
    event: Event
    stored: bool


def persist_delta(stores: SessionStores, delta: Mapping[str, Any]) -> SessionStores:
    """`stores` with `delta` written: ``app:``/``user:`` keys to their stores, ``temp:`` dropped.

    A ``None`` value is stored as a value, not a deletion.
    """
    app, user, own = dict(stores.app_state), dict(stores.user_state), dict(stores.session_state)
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key.removeprefix(APP_PREFIX)] = value
        elif key.startswith(USER_PREFIX):
            user[key.removeprefix(USER_PREFIX)] = value
        elif not key.startswith(TEMP_PREFIX):
            own[key] = value
    return SessionStores(app, user, own, stores.events)


def create_session(
    initial_state: Mapping[str, Any], stores: SessionStores | None = None
) -> SessionStores:
    """A new session's stores; `stores` carries the existing app/user stores.

    ``temp:`` keys of `initial_state` are dropped; the returned session object
    shows :meth:`SessionStores.read_state`.
    """
    shared = stores or SessionStores()
    return persist_delta(SessionStores(shared.app_state, shared.user_state), initial_state)


def without_temp_keys(event: Event) -> Event:
    """`event` with ``temp:`` keys removed from its state delta (same event if none)."""
    delta = event.actions.state_delta
    kept = {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}
    if len(kept) == len(delta):
        return event
    actions = event.actions.model_copy(update={"state_delta": kept})
    return event.model_copy(update={"actions": actions})


def append_event(
    stores: SessionStores, working_state: Mapping[str, Any], event: Event
) -> SessionAppend:
    """Append `event` to a session the way ADK's session service does.

    1. A partial event is returned unchanged and not stored.
    2. An event equal to a stored one (redelivery) is ignored.
    3. The whole delta, ``temp:`` keys included, is applied to the working
       state; ``temp:`` keys are removed from the stored event's delta.
    4. The event is stored and its delta persisted by scope.

    Example: delta ``{"n": 1, "temp:t": 2}`` -> working state gets both keys,
    the stored event's delta is ``{"n": 1}``.
    """
    working = dict(working_state)
    if event.partial or any(e.id == event.id and e == event for e in stores.events):
        return SessionAppend(stores, working, event, stored=False)
    working.update(event.actions.state_delta)
    stored_event = without_temp_keys(event)
    persisted = persist_delta(stores, stored_event.actions.state_delta)
    after = SessionStores(
        persisted.app_state,
        persisted.user_state,
        persisted.session_state,
        (*stores.events, stored_event),
    )
    return SessionAppend(after, working, stored_event, stored=True)


def rewind_state_delta(
    events: Sequence[Event], current_state: Mapping[str, Any], before_invocation_id: str
) -> State:
    """The state delta that restores session-scoped keys to before an invocation.

    Replays the deltas of the stored events before the invocation's first
    event (rewind events included; ``app:``/``user:``/``temp:`` keys skipped;
    ``None`` deletes in this replay). Keys whose current value differs get the
    replayed value; current unprefixed keys absent from the replay get
    ``None``. Deliberate ADK quirks (reference §14.8): keys set at session
    creation are in no event and so become ``None``; ``app:``/``user:`` state
    is never rolled back.

    Example: e1 ``{a: 1}``, e2 (target) ``{a: 2, b: 5}``, created with
    ``{init: 0}`` -> ``{a: 1, b: None, init: None}``.

    Raises:
        RewindTargetNotFoundError: No stored event has that invocation id.
    """
    index = next((i for i, e in enumerate(events) if e.invocation_id == before_invocation_id), None)
    if index is None:
        raise RewindTargetNotFoundError(before_invocation_id)
    replayed: State = {}
    for event in events[:index]:
        for key, value in event.actions.state_delta.items():
            if key.startswith(PREFIXES):
                continue
            if value is None:
                replayed.pop(key, None)
            else:
                replayed[key] = value
    delta = {
        key: value
        for key, value in replayed.items()
        if key not in current_state or current_state[key] != value
    }
    for key in current_state:
        if not key.startswith(PREFIXES) and key not in replayed:
            delta[key] = None
    return delta


def build_rewind_event(
    events: Sequence[Event],
    current_state: Mapping[str, Any],
    before_invocation_id: str,
    *,
    event_id: str,
    invocation_suffix: str,
    timestamp: float,
    artifact_delta: Mapping[str, int] | None = None,
) -> Event:
    """The event that rewinds a session to before `before_invocation_id`.

    Args:
        events: The stored events, stream order (rewinds not applied).
        current_state: The session's current state.
        before_invocation_id: The invocation to annul with everything after it.
        event_id: Fresh event id.
        invocation_suffix: Fresh suffix (ADK: a uuid); the invocation id is
            ``"e-" + invocation_suffix``.
        timestamp: Creation time.
        artifact_delta: Artifact versions restored, when an artifact service
            is used.

    Raises:
        RewindTargetNotFoundError: No stored event has that invocation id.
    """
    delta = rewind_state_delta(events, current_state, before_invocation_id)
    return Event(
        id=event_id,
        invocation_id=REWIND_INVOCATION_PREFIX + invocation_suffix,
        author="user",
        timestamp=timestamp,
        actions=EventActions(
            state_delta=delta,
            artifact_delta=dict(artifact_delta or {}),
            rewind_before_invocation_id=before_invocation_id,
        ),
    )
