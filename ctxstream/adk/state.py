"""Session state as ADK merges it: the session's own keys, ``app:`` and ``user:`` scopes. Pure.

A state dict ADK hands a service (``create_session(state=...)``, an event's state delta)
mixes three scopes by prefix: ``app:`` keys are shared by the app's sessions, ``user:``
keys by a user's sessions of the app, ``temp:`` keys are never stored, the rest are the
session's. Reading back, ADK merges the session's keys with the app's and the user's,
prefixes restored (app keys after the session's, user keys last). Values are made
JSON-safe as ADK's database service makes them: the one use of ADK's private
``google.adk.sessions._session_util`` (pinned release; ``ctxstream/adk/README.md``).

Example::

    stored_state({"a": 1, "app:b": 2, "temp:c": 3}) -> {"a": 1, "app:b": 2}
    merged_state({"a": 1}, app={"b": 2}, user={"c": 3}) -> {"a": 1, "app:b": 2, "user:c": 3}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.sessions import _session_util
from google.adk.sessions.state import State


def json_safe(state: Mapping[str, Any]) -> dict[str, Any]:
    """`state` with every value JSON-serializable, as ADK's database service stores it."""
    return _session_util.make_json_safe_state(dict(state))


def stored_state(state: Mapping[str, Any] | None) -> dict[str, Any]:
    """The keys of `state` a session stores (every scope but ``temp:``), JSON-safe."""
    kept = {k: v for k, v in (state or {}).items() if not k.startswith(State.TEMP_PREFIX)}
    return json_safe(kept)


def session_scope(state: Mapping[str, Any]) -> dict[str, Any]:
    """The session's own keys of `state` (neither ``app:``, ``user:`` nor ``temp:``)."""
    return dict(_session_util.extract_state_delta(dict(state))["session"])


def merged_state(
    session: Mapping[str, Any], *, app: Mapping[str, Any], user: Mapping[str, Any]
) -> dict[str, Any]:
    """The state ADK's services return: the session's keys, then app and user keys, prefixed."""
    merged = dict(session)
    merged.update({State.APP_PREFIX + key: value for key, value in app.items()})
    merged.update({State.USER_PREFIX + key: value for key, value in user.items()})
    return merged
