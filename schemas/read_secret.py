"""The read plane's shared secret: where a process finds it, and the keys derived from it.

Every process of a deployment holds the same secret: ``CTXSTREAM_READ_SECRET``
when set, else the file ``CTXSTREAM_READ_SECRET_FILE`` (by default
``~/.config/ctxstream/read-secret``), created by the first process that
needs it, mode 0600, without a race. The secret never crosses the network:
each use has its own key derived from it (HMAC-SHA256 over a purpose
string), so the credential a client sends cannot sign a claim. Why and how:
``schemas/README.md``, "The read secret".
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from schemas.errors import CtxstreamError
from schemas.kafka.settings import KafkaSettings

#: The fewest characters a secret may have (the generated one has 64).
MIN_SECRET_CHARS: Final = 32
_SECRET_BYTES: Final = 32
_ENDPOINT_PURPOSE: Final = b"ctxstream read endpoint v1"
_CLAIM_PURPOSE: Final = b"ctxstream partition claim v1"
_BEARER: Final = "Bearer "


class ReadSecretError(CtxstreamError):
    """The read plane's secret cannot be had: the message names the file or setting and why."""


@dataclass(frozen=True, slots=True)
class ReadKeys:
    """What a process uses the read secret for, each a key of its own."""

    credential: str
    """What a client sends a read endpoint (``Authorization: Bearer <credential>``)."""
    claims: bytes
    """The HMAC-SHA256 key that signs and verifies partition claims."""

    @property
    def authorization(self) -> str:
        """The ``Authorization`` header value a client sends."""
        return _BEARER + self.credential

    def admits(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries the credential (constant-time compare)."""
        if authorization is None or not authorization.startswith(_BEARER):
            return False
        offered = authorization[len(_BEARER) :].strip().encode(errors="replace")
        return hmac.compare_digest(offered, self.credential.encode())


def derived_keys(secret: bytes) -> ReadKeys:
    """The keys of `secret`. Pure."""
    credential = hmac.new(secret, _ENDPOINT_PURPOSE, hashlib.sha256).hexdigest()
    return ReadKeys(credential, hmac.new(secret, _CLAIM_PURPOSE, hashlib.sha256).digest())


def read_keys(settings: KafkaSettings) -> ReadKeys:
    """The keys of the deployment's read secret (see :func:`read_secret`)."""
    return derived_keys(read_secret(settings))


def read_secret(settings: KafkaSettings) -> bytes:
    """``read_secret`` when set, else the secret in ``read_secret_file``, created if missing.

    Raises:
        ReadSecretError: The file cannot be read or created, or holds fewer
            than :data:`MIN_SECRET_CHARS` characters.
    """
    if settings.read_secret is not None:
        return settings.read_secret.get_secret_value().encode()
    path = settings.read_secret_file
    try:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = _created(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ReadSecretError(f"read secret file {path}: {exc}") from exc
    secret = text.strip()
    if len(secret) < MIN_SECRET_CHARS:
        raise ReadSecretError(
            f"read secret file {path}: {len(secret)} characters, at least "
            f"{MIN_SECRET_CHARS} needed (delete it to have a new one made)"
        )
    return secret.encode()


def _created(path: Path) -> str:
    """The text of `path` once it exists: a new secret, or the one a racing process linked."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_hex(_SECRET_BYTES)
    # mkstemp opens with O_EXCL and mode 0600; the link makes the whole file appear at once.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".read-secret-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as output:
            output.write(token + "\n")
            output.flush()
            os.fsync(output.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return path.read_text(encoding="utf-8")
        return token
    finally:
        os.unlink(temporary)
