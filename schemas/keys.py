"""Identifiers of tenants, sessions and log positions, and session-key validation."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final, NewType

from schemas.errors import InvalidSessionKeyError

TenantId = NewType("TenantId", str)
"""The first segment of a session key: whose sessions these are."""

SessionKey = NewType("SessionKey", str)
"""`tenant/app/user/session`: the record key, so one session is one partition."""

Offset = NewType("Offset", int)
"""A record's position in its topic partition."""

MAX_PART_LENGTH: Final = 128
MAX_KEY_LENGTH: Final = 4 * MAX_PART_LENGTH + 3
_PART_NAMES: Final = ("tenant", "app", "user", "session")
_CONTROL_CHARACTER: Final = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class SessionKeyParts:
    """The four segments of a session key."""

    tenant: TenantId
    app: str
    user: str
    session: str

    @property
    def key(self) -> SessionKey:
        """The joined key, as it is written on the topic."""
        return SessionKey(f"{self.tenant}/{self.app}/{self.user}/{self.session}")


@functools.lru_cache(maxsize=65_536)
def parse_session_key(raw: str) -> SessionKeyParts:
    """Split and validate a session key.

    Memoized (the result is immutable): every record and snapshot of a session
    parses the same key, and the recently seen keys are a bounded cache.

    Example: ``"acme/support/u42/s7"`` -> tenant ``acme``, app ``support``,
    user ``u42``, session ``s7``.

    Raises:
        InvalidSessionKeyError: not four non-empty parts, a part too long, or
            a part with white space at its ends or a control character.
    """
    if len(raw) > MAX_KEY_LENGTH:
        raise InvalidSessionKeyError(raw, f"{len(raw)} characters, at most {MAX_KEY_LENGTH}")
    parts = raw.split("/")
    if len(parts) != len(_PART_NAMES):
        raise InvalidSessionKeyError(
            raw, f"has {len(parts)} '/'-separated parts, expected 4 (tenant/app/user/session)"
        )
    for name, part in zip(_PART_NAMES, parts, strict=True):
        if not part:
            raise InvalidSessionKeyError(raw, f"the {name} part is empty")
        if len(part) > MAX_PART_LENGTH:
            raise InvalidSessionKeyError(
                raw, f"the {name} part has {len(part)} characters, at most {MAX_PART_LENGTH}"
            )
        if part != part.strip():
            raise InvalidSessionKeyError(raw, f"the {name} part starts or ends with white space")
        if _CONTROL_CHARACTER.search(part):
            raise InvalidSessionKeyError(raw, f"the {name} part contains a control character")
    return SessionKeyParts(TenantId(parts[0]), parts[1], parts[2], parts[3])


def validate_session_key(raw: str) -> SessionKey:
    """The key itself once :func:`parse_session_key` accepts it."""
    return parse_session_key(raw).key
