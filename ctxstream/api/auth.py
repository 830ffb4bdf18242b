"""Who is calling: the API key of a request, checked against the deployment's live keys.

Every route takes ``Authorization: Bearer <secret>``. :meth:`Authenticator.caller`
finds the key the secret names in the :class:`~ctxstream.api.key_store.KeyDirectory`
and checks the secret against its salted hash; a request without a key, with a
key that does not match, or with a revoked one is answered 401, all three with
the same reason, so a caller learns nothing about which keys exist.
:func:`require_tenant` then lets a key reach its own tenant's sessions only
(403 otherwise, the same answer whether the session exists or not: nothing
is looked up before it).

scrypt costs tens of milliseconds by design, so a verified secret is
remembered in memory as its SHA-256, next to the hash of the record it
matched: the next request with it costs one SHA-256. A revoked or replaced
key's entry stops matching at once. At most :data:`CONCURRENT_CHECKS` scrypt
checks run at a time, in threads, so a flood of wrong secrets neither blocks
the event loop nor takes more memory than that.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from dataclasses import dataclass
from typing import Final

from ctxstream.api.errors import ApiError
from ctxstream.api.key_store import KeyDirectory
from ctxstream.api.keys import ApiKeyRecord, key_id_of, secret_matches
from schemas.errors import InvalidSessionKeyError
from schemas.keys import SessionKey, TenantId, parse_session_key

#: scrypt checks running at once (each takes about 16 MiB).
CONCURRENT_CHECKS: Final = 2
MISSING_KEY: Final = "no API key: send 'Authorization: Bearer <key>' (ctxstream keys create)"
INVALID_KEY: Final = "the API key is not valid"
OTHER_TENANT: Final = "this API key does not reach that tenant's sessions"


@dataclass(frozen=True, slots=True)
class Caller:
    """The key a request was authenticated with."""

    key_id: str
    tenant: TenantId
    digest: str
    """The hash of the record the secret matched: the key is live while its record keeps it."""


class Authenticator:
    """Checks requests' secrets against the live keys of a :class:`KeyDirectory`."""

    def __init__(self, keys: KeyDirectory) -> None:
        """Check secrets against `keys`."""
        self._keys = keys
        self._verified: dict[str, tuple[str, bytes]] = {}
        self._checks = asyncio.Semaphore(CONCURRENT_CHECKS)

    async def caller(self, secret: str | None) -> Caller:
        """The key `secret` is, when it is live.

        Raises:
            ApiError: ``unauthorized`` (no secret, a wrong or revoked one), or
                ``unavailable`` when the live keys cannot be known now.
        """
        if not secret:
            raise ApiError("unauthorized", MISSING_KEY)
        key_id = key_id_of(secret)
        record = self._keys.record(key_id) if key_id is not None else None
        if record is None:
            raise ApiError("unauthorized", INVALID_KEY)
        if not await self._matches(record, secret):
            raise ApiError("unauthorized", INVALID_KEY)
        return Caller(record.key_id, record.tenant, record.digest)

    def still_live(self, caller: Caller) -> bool:
        """Whether `caller`'s key is still the live one (not revoked, not replaced)."""
        record = self._keys.record(caller.key_id)
        return record is not None and record.digest == caller.digest

    async def _matches(self, record: ApiKeyRecord, secret: str) -> bool:
        fingerprint = hashlib.sha256(secret.encode()).digest()
        known = self._verified.get(record.key_id)
        if known is not None and known[0] == record.digest:
            return hmac.compare_digest(known[1], fingerprint)
        async with self._checks:
            matched = await asyncio.to_thread(secret_matches, record, secret)
        if matched:
            self._verified[record.key_id] = (record.digest, fingerprint)
        return matched


def require_tenant(caller: Caller, tenant: str) -> None:
    """Let `caller` on only if `tenant` is its key's.

    Raises:
        ApiError: ``forbidden``; the reason names neither tenant nor session.
    """
    if tenant != caller.tenant:
        raise ApiError("forbidden", OTHER_TENANT)


def session_of(caller: Caller, session_key: str) -> SessionKey:
    """`session_key`, once it is a valid key of `caller`'s tenant.

    Raises:
        ApiError: ``invalid-argument`` naming what is wrong with the key (a path
            step, an empty part, white space, ...), or ``forbidden``.
    """
    try:
        parts = parse_session_key(session_key)
    except InvalidSessionKeyError as exc:
        raise ApiError("invalid-argument", f"session_key: {exc}") from exc
    require_tenant(caller, parts.tenant)
    return parts.key
