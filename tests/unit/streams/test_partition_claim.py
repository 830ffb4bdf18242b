"""Partition claims: signed over every field, and routed by only with an address of the form."""

from __future__ import annotations

import orjson
import pytest

from streams.reads.claim import (
    PartitionClaim,
    UnsignedClaim,
    claim_refusal,
    decode_claim,
    is_read_address,
    signed_claim,
)

KEY = b"k" * 32
FIELDS: dict[str, object] = {
    "partition": 3,
    "events_partitions": 12,
    "address": "w1.internal:8090",
    "worker_id": "w1-123-abcd",
    "app_id": "ctxstream-projector",
}


def _signed(key: bytes = KEY) -> PartitionClaim:
    return signed_claim(
        key,
        partition=3,
        events_partitions=12,
        address="w1.internal:8090",
        worker_id="w1-123-abcd",
        app_id="ctxstream-projector",
    )


def test_a_signed_claim_is_accepted_and_round_trips() -> None:
    claim = _signed()
    assert claim_refusal(KEY, claim) is None
    assert decode_claim(claim.model_dump_json().encode()) == claim


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("partition", 4),
        ("events_partitions", 1),
        ("address", "w2.internal:8090"),
        ("worker_id", "w2"),
        ("app_id", "other"),
    ],
)
def test_a_claim_with_any_field_changed_fails_its_signature(field: str, value: object) -> None:
    changed = _signed().model_copy(update={field: value})
    assert claim_refusal(KEY, changed) == "its signature is not the read secret's"


def test_a_claim_signed_with_another_secret_is_refused() -> None:
    assert claim_refusal(KEY, _signed(b"o" * 32)) == "its signature is not the read secret's"


def test_a_signed_claim_with_an_address_not_of_the_form_is_refused() -> None:
    claim = signed_claim(KEY, **{**FIELDS, "address": "127.0.0.1:8090/x?"})  # type: ignore[arg-type]
    assert claim_refusal(KEY, claim) == "its address is not of the form host:port"


def test_an_unsigned_version_1_claim_decodes_as_unsigned() -> None:
    old = orjson.dumps({"schema_version": 1, **FIELDS})
    assert decode_claim(old) == UnsignedClaim(3)
    with pytest.raises(ValueError, match="signature"):
        decode_claim(orjson.dumps({"schema_version": 2, **FIELDS}))


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:8090",
        "10.0.0.7:1",
        "w1:65535",
        "w1.internal.example:8090",
        "my_host-2:80",
        "[::1]:8090",
        "[2001:db8::7]:443",
    ],
)
def test_an_address_of_the_advertised_form_is_accepted(address: str) -> None:
    assert is_read_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:8090/x?",
        "127.0.0.1:8090?q",
        "127.0.0.1:8090#f",
        "user@w1:8090",
        "user:pw@w1:8090",
        "http://w1:8090",
        "w1",
        "w1:",
        ":8090",
        "w1:0",
        "w1:65536",
        "w1:08090",
        "w1:80:80",
        "999.1.1.1:80",
        "1.2.3:80",
        "::1:8090",
        "[::1%eth0]:8090",
        "[not-v6]:8090",
        "w1 :8090",
        "w1\n:8090",
        "-w1:8090",
        "w1..x:8090",
        "w1/../x:8090",
        "",
    ],
)
def test_an_address_not_of_the_form_is_refused(address: str) -> None:
    assert not is_read_address(address)
