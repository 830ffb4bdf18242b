"""Who is calling: the API key of a request, checked against the deployment's live keys.

Every route takes ``Authorization: Bearer <secret>``. :meth:`Authenticator.caller`
finds the key the secret names in the :class:`~ctxstream.api.key_store.KeyDirectory`
and checks the secret against its salted hash; a request without a key, with a
key that does not match, or with a revoked one is answered 401, all three with
the same reason, so a caller learns nothing about which keys exist. A secret
naming no live key costs the same one fast hash as a wrong secret of a live
key, so timing does not tell them apart either (for keys of the fast scheme).
:func:`require_tenant` then lets a key reach its own tenant's sessions only
(403 otherwise, the same answer whether the session exists or not: nothing
is looked up before it).

More in ``ctxstream/api/README.md`` (auth.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from ctxstream.api.errors import ApiError
from ctxstream.api.key_store import KeyDirectory
from ctxstream.api.keys import ApiKeyRecord, is_slow, key_id_of, no_key_check, secret_matches
from schemas.errors import InvalidSessionKeyError
from schemas.keys import SessionKey, TenantId, parse_session_key
from schemas.log_text import shown

logger = logging.getLogger(__name__)

#: scrypt checks running at once (each takes about 16 MiB).
CONCURRENT_CHECKS: Final = 2
#: scrypt checks that may wait for one of those, and wrong secrets remembered, by default.
CHECKS_WAITING: Final = 32
FAILURES_REMEMBERED: Final = 10_000
#: How long a wrong secret of a scrypt key is answered from memory.
FAILURE_MEMORY_S: Final = 600.0
#: How long the answer to a refused secret is held, by default.
REFUSAL_DELAY_S: Final = 1.0
#: Refused secrets are logged in one line per this interval at most, counted.
FAILED_LOG_INTERVAL_S: Final = 10.0
MISSING_KEY: Final = "no API key: send 'Authorization: Bearer <key>' (ctxstream keys create)"
INVALID_KEY: Final = "the API key is not valid"
OTHER_TENANT: Final = "this API key does not reach that tenant's sessions"
CHECKS_BUSY: Final = "too many API key checks are waiting; send the request again in a moment"


@dataclass(frozen=True, slots=True)
class Caller:
    """The key a request was authenticated with."""

    key_id: str
    tenant: TenantId
    digest: str
    """The hash of the record the secret matched: the key is live while its record keeps it."""


class _RefusedSecrets:
    """Counts refused secrets and logs them, one line per interval at most."""

    def __init__(self) -> None:
        self.total = 0
        self._unlogged = 0
        self._logged_at = -FAILED_LOG_INTERVAL_S

    def note(self, key_id: str | None) -> None:
        self.total += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._logged_at >= FAILED_LOG_INTERVAL_S:
            logger.warning(
                "api keys refused count=%d total=%d last_key_id=%s",
                self._unlogged,
                self.total,
                shown(key_id),
            )
            self._logged_at, self._unlogged = now, 0


class Authenticator:
    """Checks requests' secrets against the live keys of a :class:`KeyDirectory`."""

    def __init__(
        self,
        keys: KeyDirectory,
        *,
        waiting: int = CHECKS_WAITING,
        failures_remembered: int = FAILURES_REMEMBERED,
        refusal_delay_s: float = REFUSAL_DELAY_S,
    ) -> None:
        """Check secrets against `keys`, with at most `waiting` slow checks queued.

        A refused secret is answered after `refusal_delay_s`.
        """
        self._refusal_delay_s = refusal_delay_s
        self._keys = keys
        self._verified: dict[str, tuple[str, bytes]] = {}
        self._failed: OrderedDict[tuple[str, str, bytes], float] = OrderedDict()
        self._failures_remembered = failures_remembered
        self._checks = asyncio.Semaphore(CONCURRENT_CHECKS)
        self._waiting = 0
        self._max_waiting = waiting
        self.refused = _RefusedSecrets()

    async def caller(self, secret: str | None) -> Caller:
        """The key `secret` is, when it is live.

        Raises:
            ApiError: ``unauthorized`` (no secret, a wrong or revoked one), or
                ``unavailable`` when the live keys cannot be known now or too
                many slow checks are waiting.
        """
        if not secret:
            raise ApiError("unauthorized", MISSING_KEY)
        key_id = key_id_of(secret)
        record = self._keys.record(key_id) if key_id is not None else None
        if record is None:
            no_key_check(secret)
            await self._refuse(key_id)
        elif not await self._matches(record, secret):
            await self._refuse(key_id)
        else:
            return Caller(record.key_id, record.tenant, record.digest)
        raise ApiError("unauthorized", INVALID_KEY)

    async def _refuse(self, key_id: str | None) -> None:
        """Count a refused secret, then hold its answer for the refusal delay.

        A client that sends wrong secrets one after another (a flood, a
        guesser) so gets at most one answer per delay on each connection it
        holds, instead of taking the server's time from every tenant.
        """
        self.refused.note(key_id)
        if self._refusal_delay_s > 0:
            await asyncio.sleep(self._refusal_delay_s)

    def still_live(self, caller: Caller) -> bool:
        """Whether `caller`'s key is still the live one (not revoked, not replaced)."""
        record = self._keys.record(caller.key_id)
        return record is not None and record.digest == caller.digest

    async def _matches(self, record: ApiKeyRecord, secret: str) -> bool:
        fingerprint = hashlib.sha256(secret.encode()).digest()
        known = self._verified.get(record.key_id)
        if known is not None and known[0] == record.digest:
            return hmac.compare_digest(known[1], fingerprint)  # a key has one secret
        if is_slow(record):
            matched = await self._slow_check(record, secret, fingerprint)
        else:
            matched = secret_matches(record, secret)
        if matched:
            self._verified[record.key_id] = (record.digest, fingerprint)
        return matched

    async def _slow_check(self, record: ApiKeyRecord, secret: str, fingerprint: bytes) -> bool:
        """The scrypt check: remembered when wrong, refused when too many wait."""
        failure = (record.key_id, record.digest, fingerprint)
        now = time.monotonic()
        remembered = self._failed.get(failure)
        if remembered is not None and remembered > now:
            return False
        if self._waiting >= self._max_waiting:
            raise ApiError("unavailable", CHECKS_BUSY)
        self._waiting += 1
        try:
            async with self._checks:
                matched = await asyncio.to_thread(secret_matches, record, secret)
        finally:
            self._waiting -= 1
        if not matched:
            self._failed[failure] = time.monotonic() + FAILURE_MEMORY_S
            self._failed.move_to_end(failure)
            while len(self._failed) > self._failures_remembered:
                self._failed.popitem(last=False)
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
