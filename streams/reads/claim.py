"""A partition claim as the `partition-owners` topic holds it: its fields, signature and address.

Pure. A claim routes every tenant's reads of a partition, and the topic is
writable by any client of the broker, so a claim counts only when the
projector that wrote it signed it: ``signature`` is the HMAC-SHA256, keyed by
the read secret's claim key (:class:`schemas.read_secret.ReadKeys`), of the
claim's canonical bytes: every other field, as JSON with sorted keys and no
white space. A changed field, or a claim signed with another secret, is
refused by :func:`claim_refusal`. Its ``address`` must also be of the advertised form,
``host:port`` (:func:`is_read_address`), so that no claim can make a client
send its request to a path, a query or a user of the claimant's choosing.

Claims of schema version 1 (before signing) still decode, as
:class:`UnsignedClaim`, so a deployment's older records do not look
malformed, but nothing routes by them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

_LABEL: Final = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_NAME: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_ADDRESS: Final = re.compile(
    r"(?P<host>\[[0-9A-Fa-f:.]{2,45}\]|[^:\[\]]{1,253}):(?P<port>[0-9]{1,5})"
)
_NUMERIC: Final = re.compile(r"[0-9.]+")


class PartitionClaim(BaseModel):
    """One worker's signed claim of one `events` partition."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[2] = 2
    partition: int = Field(ge=0)
    """The `events` partition claimed."""
    events_partitions: int = Field(ge=1)
    """How many partitions the claimant routes sessions over (the broker's count)."""
    address: str = Field(min_length=1, max_length=300)
    """``host:port`` of the claimant's read endpoint."""
    worker_id: str = Field(min_length=1, max_length=300)
    """The claimant process, unique per engine run."""
    app_id: str = Field(min_length=1, max_length=300)
    """The claimant's consumer group."""
    signature: str = Field(pattern=r"^[0-9a-f]{64}$")
    """HMAC-SHA256 (hex) of the other fields' canonical bytes, keyed by the claim key."""


class _ClaimV1(BaseModel):
    """A claim as version 1 wrote it: no signature."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1]
    partition: int = Field(ge=0)
    events_partitions: int = Field(ge=1)
    address: str = Field(min_length=1, max_length=300)
    worker_id: str = Field(min_length=1, max_length=300)
    app_id: str = Field(min_length=1, max_length=300)


@dataclass(frozen=True, slots=True)
class UnsignedClaim:
    """A claim of schema version 1, written before claims were signed: never routed by."""

    partition: int


_CLAIM: Final[TypeAdapter[PartitionClaim | _ClaimV1]] = TypeAdapter(
    Annotated[PartitionClaim | _ClaimV1, Field(discriminator="schema_version")]
)


def decode_claim(value: bytes) -> PartitionClaim | UnsignedClaim:
    """The claim a record of the topic holds (its signature not yet checked).

    Raises:
        ValueError: Not a claim of a known version (pydantic's ValidationError).
    """
    claim = _CLAIM.validate_json(value)
    return UnsignedClaim(claim.partition) if isinstance(claim, _ClaimV1) else claim


def signed_claim(
    key: bytes, *, partition: int, events_partitions: int, address: str, worker_id: str, app_id: str
) -> PartitionClaim:
    """A claim of these fields, signed with the claim key `key`."""
    fields = {
        "schema_version": 2,
        "partition": partition,
        "events_partitions": events_partitions,
        "address": address,
        "worker_id": worker_id,
        "app_id": app_id,
    }
    return PartitionClaim.model_validate({**fields, "signature": _signature(key, fields)})


def claim_refusal(key: bytes, claim: PartitionClaim) -> str | None:
    """Why `claim` must not route reads (None: it may): a bad signature or address."""
    expected = _signature(key, claim.model_dump(exclude={"signature"}))
    if not hmac.compare_digest(expected, claim.signature):
        return "its signature is not the read secret's"
    if not is_read_address(claim.address):
        return "its address is not of the form host:port"
    return None


def _signature(key: bytes, fields: Mapping[str, object]) -> str:
    return hmac.new(key, _canonical(fields), hashlib.sha256).hexdigest()


def _canonical(fields: Mapping[str, object]) -> bytes:
    """Every field but the signature, as JSON with sorted keys and no white space."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def is_read_address(address: str) -> bool:
    """Whether `address` is ``host:port`` and nothing else.

    The host is a name (letters, digits, ``-`` and ``_`` in dot-separated
    labels), an IPv4 literal or a bracketed IPv6 literal without a zone; the
    port is 1 to 65535. No scheme, user, path, query or fragment.

    Example: ``w1.internal:8090``, ``10.0.0.7:8090`` and ``[::1]:8090`` are;
    ``127.0.0.1:8090/x?``, ``u@h:1``, ``h:0``, ``h`` and ``999.1.1.1:1`` are not.
    """
    matched = _ADDRESS.fullmatch(address)
    if matched is None:
        return False
    host, port = matched.group("host"), matched.group("port")
    if not 1 <= int(port) <= 65_535 or (len(port) > 1 and port.startswith("0")):
        return False
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    if _NUMERIC.fullmatch(host) is not None:
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return False
        return True
    return _NAME.fullmatch(host) is not None
