"""API keys: the secret a tenant is given, the salted hash stored for it, and the check. Pure.

A key is issued once (``ctxstream keys create TENANT``) as a secret
``cs_<key id>_<token>``: the key id (16 hex digits) names the key's record,
the token (32 random bytes, URL-safe base64) is what makes it secret. Only an
:class:`ApiKeyRecord` is stored: the key id, the tenant, a random salt and
``scrypt(secret, salt)`` with its cost parameters, so a copy of the store
yields no usable secret (and scrypt makes guessing cost memory and time).
:func:`secret_matches` recomputes the hash and compares it with
``hmac.compare_digest``. Randomness and time are arguments: the caller draws
them (``secrets``, the clock), a test pins them.

Example::

    issued = issue_key("acme", key_id="3f2a...", token="kQ...", salt=b"...", created_at=now)
    issued.secret              -> "cs_3f2a..._kQ..."   (shown once, never stored)
    key_id_of(issued.secret)   -> "3f2a..."
    secret_matches(issued.record, issued.secret) -> True
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.keys import TenantId

#: What every secret starts with, so a leaked one is recognisable (secret scanners).
SECRET_PREFIX: Final = "cs"  # noqa: S105 (a marker, not a password)
#: scrypt's cost: 2**14 rounds of 8-block mixing, about 16 MiB and tens of ms per check.
SCRYPT_N: Final = 2**14
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
_HASH_BYTES: Final = 32
# scrypt needs 128 * n * r bytes; OpenSSL refuses above its default 32 MiB without maxmem.
_SCRYPT_MAXMEM: Final = 64 * 1024 * 1024
_KEY_ID: Final = re.compile(r"[0-9a-f]{16}")
_SECRET: Final = re.compile(rf"{SECRET_PREFIX}_([0-9a-f]{{16}})_[A-Za-z0-9_-]{{16,128}}")


class ApiKeyRecord(BaseModel):
    """One API key as the `api-keys` topic holds it (keyed by `key_id`): no secret, its hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    key_id: str = Field(pattern=_KEY_ID.pattern)
    """Names the key in the store, in logs and in ``ctxstream keys revoke``; not secret."""
    tenant: TenantId
    """The only tenant whose sessions the key reaches."""
    salt: str = Field(pattern=r"^[0-9a-f]{32,128}$")
    """Random bytes (hex) hashed with the secret, so equal secrets never hash alike."""
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    """``scrypt(secret, salt, n, r, p)`` (hex)."""
    kdf: Literal["scrypt"] = "scrypt"
    n: int = Field(ge=2, le=2**20)
    r: int = Field(ge=1, le=32)
    p: int = Field(ge=1, le=16)
    created_at: AwareDatetime


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A new key: the secret to hand over once, and the record to store."""

    secret: str
    record: ApiKeyRecord


def issue_key(
    tenant: TenantId, *, key_id: str, token: str, salt: bytes, created_at: AwareDatetime
) -> IssuedKey:
    """A key of `tenant` made of the given random parts.

    Args:
        tenant: A valid tenant id (the caller checked it).
        key_id: 16 lowercase hex digits (``secrets.token_hex(8)``).
        token: 16 to 128 URL-safe base64 characters (``secrets.token_urlsafe(32)``).
        salt: 16 to 64 random bytes (``secrets.token_bytes(16)``).
        created_at: When it was issued.

    Raises:
        ValueError: A part has the wrong shape (a bug of the caller).
    """
    secret = f"{SECRET_PREFIX}_{key_id}_{token}"
    if _SECRET.fullmatch(secret) is None:
        raise ValueError("key_id must be 16 hex digits and token 16-128 URL-safe characters")
    record = ApiKeyRecord(
        key_id=key_id,
        tenant=tenant,
        salt=salt.hex(),
        digest=_scrypt(secret, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P).hex(),
        n=SCRYPT_N,
        r=SCRYPT_R,
        p=SCRYPT_P,
        created_at=created_at,
    )
    return IssuedKey(secret, record)


def key_id_of(secret: str) -> str | None:
    """The key id a secret names; None when it is not shaped as a secret at all."""
    matched = _SECRET.fullmatch(secret)
    return matched.group(1) if matched is not None else None


def secret_matches(record: ApiKeyRecord, secret: str) -> bool:
    """Whether `secret` is the one `record` was issued for (scrypt, constant-time compare)."""
    if key_id_of(secret) != record.key_id:
        return False
    digest = _scrypt(secret, bytes.fromhex(record.salt), record.n, record.r, record.p)
    return hmac.compare_digest(digest, bytes.fromhex(record.digest))


def _scrypt(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        secret.encode(), salt=salt, n=n, r=r, p=p, maxmem=_SCRYPT_MAXMEM, dklen=_HASH_BYTES
    )
