"""A listing's cursor: where its next page starts, opaque to the caller, bound to its filter.

A page of a tenant's sessions is ordered newest first, by ``(last_activity, session_key)``
descending; the cursor names the last session of a page, and the next page is what lies
strictly after it in that order (a keyset, never an offset). The cursor also names the
filter it was made for, so it cannot be replayed against another tenant, app or user: the
query is scoped to the caller's tenant whatever a cursor says, and a cursor of another
filter is refused naming ``cursor``. Pure.

Example::

    scope = ListingScope("acme", app="support")
    text = encode_cursor(scope, ListingPosition(1700000000.5, "acme/support/u1/s9"))
    decode_cursor(text, scope)  -> ListingPosition(1700000000.5, "acme/support/u1/s9")
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Final

import orjson

from ctxstream.errors import InvalidArgumentError

#: The cursor's layout version: a cursor of another layout is refused, never misread.
CURSOR_VERSION: Final = 1
#: The longest cursor accepted (a session key is at most 4 x 128 characters, 4 bytes each).
MAX_CURSOR_CHARS: Final = 4_096


@dataclass(frozen=True, slots=True)
class ListingScope:
    """Which sessions a listing holds: a tenant's, of one app, of one user of that app."""

    tenant: str
    app: str | None = None
    user: str | None = None

    def __post_init__(self) -> None:
        if self.user is not None and self.app is None:
            raise InvalidArgumentError("user: give app too (a user id is one app's)")


@dataclass(frozen=True, slots=True)
class ListingPosition:
    """The last session of a page: its last activity and key."""

    last_activity: float
    session_key: str


def encode_cursor(scope: ListingScope, position: ListingPosition) -> str:
    """The cursor of the page after `position` in the listing of `scope` (URL-safe text)."""
    payload = {
        "v": CURSOR_VERSION,
        "scope": [scope.tenant, scope.app, scope.user],
        # float.hex: exactly the stored double, whatever the JSON side does with floats.
        "at": position.last_activity.hex(),
        "key": position.session_key,
    }
    return base64.urlsafe_b64encode(orjson.dumps(payload)).rstrip(b"=").decode("ascii")


def decode_cursor(text: str, scope: ListingScope) -> ListingPosition:
    """The position `text` names, when it is a cursor of `scope`'s listing.

    Raises:
        InvalidArgumentError: ``cursor: ...``: not a cursor, another layout's, or one of
            another tenant's, app's or user's listing.
    """
    if len(text) > MAX_CURSOR_CHARS:
        raise InvalidArgumentError(f"cursor: longer than {MAX_CURSOR_CHARS} characters")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        payload = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise InvalidArgumentError("cursor: not a cursor a listing gave") from None
    if not isinstance(payload, dict) or payload.get("v") != CURSOR_VERSION:
        raise InvalidArgumentError("cursor: not a cursor a listing gave")
    if payload.get("scope") != [scope.tenant, scope.app, scope.user]:
        raise InvalidArgumentError(
            "cursor: it continues another listing (tenant, app or user differ)"
        )
    at, key = payload.get("at"), payload.get("key")
    if not isinstance(at, str) or not isinstance(key, str):
        raise InvalidArgumentError("cursor: not a cursor a listing gave")
    try:
        last_activity = float.fromhex(at)
    except (ValueError, OverflowError):
        raise InvalidArgumentError("cursor: not a cursor a listing gave") from None
    if not math.isfinite(last_activity):
        raise InvalidArgumentError("cursor: not a cursor a listing gave")
    return ListingPosition(last_activity, key)
