"""Session state by scope, folded from state deltas (reference §11). Pure: no I/O.

The same semantics as :func:`projections.fold.state.append_event`, kept in
persistent maps so that one more event costs O(log keys), not a copy of the
state: ``app:`` and ``user:`` keys go to their scope with the prefix
stripped, ``temp:`` keys are never persisted, ``None`` is stored as a value,
and partial events are never stored, so their deltas are not applied. A
rewind event carries the delta that restores the session's own keys (§10),
so rewinds need no special case here.

The ``app`` and ``user`` maps hold what *this* session wrote to those shared
scopes; merging writes of other sessions is for a reader that sees them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyrsistent import PMap, pmap

from projections.fold.state import APP_PREFIX, TEMP_PREFIX, USER_PREFIX
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class ScopedState:
    """Persisted state written by a session's events.

    Attributes:
        app: ``app:`` keys, prefix stripped.
        user: ``user:`` keys, prefix stripped.
        session: The session's own (unprefixed) keys.
    """

    app: PMap[str, Any] = field(default_factory=pmap)
    user: PMap[str, Any] = field(default_factory=pmap)
    session: PMap[str, Any] = field(default_factory=pmap)

    def read_state(self) -> dict[str, Any]:
        """The state a freshly read session shows: own keys plus prefixed app/user keys."""
        merged = dict(self.session)
        merged.update({APP_PREFIX + key: value for key, value in self.app.items()})
        merged.update({USER_PREFIX + key: value for key, value in self.user.items()})
        return merged


def apply_state_delta(state: ScopedState, event: Event) -> ScopedState:
    """`state` after `event`'s state delta.

    Example: ``{"app:theme": "dark", "n": 1, "temp:t": 2}`` -> app
    ``{theme: dark}``, session ``{n: 1}``, nothing for ``temp:t``.
    """
    delta = event.actions.state_delta
    if not delta or event.partial:
        return state
    app, user, session = state.app, state.user, state.session
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app = app.set(key.removeprefix(APP_PREFIX), value)
        elif key.startswith(USER_PREFIX):
            user = user.set(key.removeprefix(USER_PREFIX), value)
        elif not key.startswith(TEMP_PREFIX):
            session = session.set(key, value)
    return ScopedState(app, user, session)
