"""Identifiers of tenants, sessions and log positions, and session-key validation."""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import Final, NewType

from schemas.errors import InvalidSessionKeyError, TenantMismatchError
from schemas.log_text import UNSAFE_CATEGORIES

TenantId = NewType("TenantId", str)
"""The first segment of a session key: whose sessions these are."""

SessionKey = NewType("SessionKey", str)
"""`tenant/app/user/session`: the record key, so one session is one partition."""

Offset = NewType("Offset", int)
"""A record's position in its topic partition."""

MAX_PART_LENGTH: Final = 128
MAX_KEY_LENGTH: Final = 4 * MAX_PART_LENGTH + 3
_PART_NAMES: Final = ("tenant", "app", "user", "session")
# Parts that read as steps of a path; keys end up in paths, ACLs and labels.
_PATH_STEPS: Final = frozenset({".", ".."})


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
        InvalidSessionKeyError: not four non-empty parts, a part too long, a
            part that is ``.`` or ``..``, or a part with white space at its
            ends or a character of a category in
            :data:`schemas.log_text.UNSAFE_CATEGORIES` (controls, C1 included;
            format characters such as bidi overrides and zero-width spaces;
            line and paragraph separators; surrogates; private use).
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
            raise InvalidSessionKeyError(
                raw, f"the {name} part {part!r} starts or ends with white space"
            )
        if part in _PATH_STEPS:
            raise InvalidSessionKeyError(raw, f"the {name} part is {part!r}, a path step")
        if (unsafe := _unsafe_character(part)) is not None:
            raise InvalidSessionKeyError(
                raw,
                f"the {name} part {part!r} contains {unsafe!r} "
                f"(U+{ord(unsafe):04X}, Unicode category {unicodedata.category(unsafe)})",
            )
    return SessionKeyParts(TenantId(parts[0]), parts[1], parts[2], parts[3])


def _unsafe_character(part: str) -> str | None:
    return next((c for c in part if unicodedata.category(c) in UNSAFE_CATEGORIES), None)


def validate_session_key(raw: str) -> SessionKey:
    """The key itself once :func:`parse_session_key` accepts it."""
    parse_session_key(raw)
    return SessionKey(raw)  # its four parts joined again: `raw`, without building it anew


def check_tenant_owns_session(tenant: str, session_key: str) -> None:
    """Accept a record's tenant only if it is the tenant part of its session key.

    Every record that names both (envelopes, compaction requests, projection
    snapshots) makes this check, so a record cannot file one tenant's data
    under another's session.

    Example: ``("acme", "acme/app/u/s")`` passes; ``("evil", "acme/app/u/s")``
    raises.

    Raises:
        InvalidSessionKeyError: `session_key` is not a valid key.
        TenantMismatchError: the key belongs to another tenant.
    """
    owner = parse_session_key(session_key).tenant
    if owner != tenant:
        raise TenantMismatchError(tenant=tenant, session_key=session_key, owner=owner)
