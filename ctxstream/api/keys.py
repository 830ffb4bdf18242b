"""API keys: the secret a tenant is given, the salted hash stored for it, and the check. Pure.

More in ``ctxstream/api/README.md`` (keys.py).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from typing import Annotated, Final, Literal, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from ctxstream.errors import InvalidArgumentError
from ctxstream.subscription_request import checked_tenant
from schemas.keys import TenantId

#: What every secret starts with, so a leaked one is recognisable (secret scanners).
SECRET_PREFIX: Final = "cs"  # noqa: S105 (a marker, not a password)
_HASH_BYTES: Final = 32
#: The salt hashed with a secret that names no live key, so that check costs as much.
_NO_KEY_SALT: Final = bytes(16)
# scrypt needs 128 * n * r bytes; OpenSSL refuses above its default 32 MiB without maxmem.
_SCRYPT_MAXMEM: Final = 64 * 1024 * 1024
_KEY_ID: Final = re.compile(r"[0-9a-f]{16}")
_SECRET: Final = re.compile(rf"{SECRET_PREFIX}_([0-9a-f]{{16}})_[A-Za-z0-9_-]{{16,128}}")


KeyHash = Literal["hmac-sha256", "scrypt"]
"""How a record's digest was made: ``HMAC-SHA256(salt, secret)``, or scrypt (version 1 records)."""


class ApiKeyRecord(BaseModel):
    """One API key as the `api-keys` topic holds it (keyed by `key_id`): no secret, its hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[2] = 2
    key_id: str = Field(pattern=_KEY_ID.pattern)
    """Names the key in the store, in logs and in ``ctxstream keys revoke``; not secret."""
    tenant: TenantId
    """The only tenant whose sessions the key reaches."""
    salt: str = Field(pattern=r"^[0-9a-f]{32,128}$")
    """Random bytes (hex) hashed with the secret, so equal secrets never hash alike."""
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The secret's hash (hex), made as `kdf` says."""
    kdf: KeyHash = "hmac-sha256"
    n: int | None = Field(default=None, ge=2, le=2**20)
    """scrypt's cost parameters (``scrypt`` records only)."""
    r: int | None = Field(default=None, ge=1, le=32)
    p: int | None = Field(default=None, ge=1, le=16)
    created_at: AwareDatetime

    @field_validator("tenant")
    @classmethod
    def _a_tenant(cls, tenant: str) -> str:
        # A record written past `keys create` (anyone who reaches the broker) may name anything.
        try:
            return checked_tenant(tenant)
        except InvalidArgumentError as exc:
            raise ValueError(str(exc)) from exc

    @model_validator(mode="after")
    def _costs_of_its_hash(self) -> Self:
        costs = (self.n, self.r, self.p)
        if self.kdf == "scrypt" and None in costs:
            raise ValueError("kdf scrypt: n, r and p are required")
        if self.kdf == "hmac-sha256" and costs != (None, None, None):
            raise ValueError("kdf hmac-sha256: n, r and p are scrypt's, not its")
        return self


class _ApiKeyRecordV1(BaseModel):
    """A record as version 1 wrote it: always scrypt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1]
    key_id: str
    tenant: str
    salt: str
    digest: str
    kdf: Literal["scrypt"] = "scrypt"
    n: int
    r: int
    p: int
    created_at: AwareDatetime


_RECORD: Final[TypeAdapter[ApiKeyRecord | _ApiKeyRecordV1]] = TypeAdapter(
    Annotated[ApiKeyRecord | _ApiKeyRecordV1, Field(discriminator="schema_version")]
)


def decode_key_record(value: bytes) -> ApiKeyRecord:
    """The record a value of the `api-keys` topic holds, version 1 lifted to 2.

    Raises:
        ValueError: Not a record of a known version (pydantic's ValidationError).
    """
    record = _RECORD.validate_json(value)
    if isinstance(record, _ApiKeyRecordV1):
        # v1 differs only in its version: every v1 record is a v2 scrypt record.
        return ApiKeyRecord.model_validate(record.model_dump() | {"schema_version": 2})
    return record


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
        digest=_fast_hash(secret, salt).hex(),
        created_at=created_at,
    )
    return IssuedKey(secret, record)


def key_id_of(secret: str) -> str | None:
    """The key id a secret names; None when it is not shaped as a secret at all."""
    matched = _SECRET.fullmatch(secret)
    return matched.group(1) if matched is not None else None


def is_slow(record: ApiKeyRecord) -> bool:
    """Whether checking a secret against `record` costs a KDF (tens of ms), not one HMAC."""
    return record.kdf == "scrypt"


def secret_matches(record: ApiKeyRecord, secret: str) -> bool:
    """Whether `secret` is the one `record` was issued for (its hash, constant-time compare)."""
    if key_id_of(secret) != record.key_id:
        return False
    salt = bytes.fromhex(record.salt)
    if record.n is not None and record.r is not None and record.p is not None:
        digest = _scrypt(secret, salt, record.n, record.r, record.p)  # kdf scrypt: its costs
    else:
        digest = _fast_hash(secret, salt)
    return hmac.compare_digest(digest, bytes.fromhex(record.digest))


def no_key_check(secret: str) -> bool:
    """The check of a secret that names no live key: as costly as a fast one, and False.

    So a wrong secret takes as long whether its key id exists or not.
    """
    hmac.compare_digest(_fast_hash(secret, _NO_KEY_SALT), bytes(_HASH_BYTES))
    return False


def _fast_hash(secret: str, salt: bytes) -> bytes:
    return hmac.new(salt, secret.encode(), hashlib.sha256).digest()


def _scrypt(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        secret.encode(), salt=salt, n=n, r=r, p=p, maxmem=_SCRYPT_MAXMEM, dklen=_HASH_BYTES
    )
