"""API keys: issued secrets, their stored hashes and the check."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import orjson
import pytest

from ctxstream.api.keys import (
    ApiKeyRecord,
    IssuedKey,
    decode_key_record,
    is_slow,
    issue_key,
    key_id_of,
    no_key_check,
    secret_matches,
)
from schemas.keys import TenantId

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TOKEN = "kQ3x" * 10 + "abc"


def _issued(key_id: str = "0123456789abcdef", token: str = TOKEN) -> IssuedKey:
    return issue_key(
        TenantId("acme"), key_id=key_id, token=token, salt=b"\x01" * 16, created_at=CREATED
    )


def test_a_secret_names_its_key_and_matches_only_its_record() -> None:
    issued = _issued()
    assert issued.secret == f"cs_0123456789abcdef_{TOKEN}"
    assert key_id_of(issued.secret) == "0123456789abcdef"
    assert secret_matches(issued.record, issued.secret)
    other = _issued(key_id="fedcba9876543210")
    assert not secret_matches(other.record, issued.secret)  # another key's record
    assert not secret_matches(issued.record, issued.secret[:-1] + "x")  # one character off


def test_the_record_holds_the_salted_hash_never_the_secret() -> None:
    issued = _issued()
    stored = issued.record.model_dump_json()
    assert TOKEN not in stored
    assert issued.record.salt == "01" * 16
    assert len(issued.record.digest) == 64
    assert issued.record.kdf == "hmac-sha256"
    assert (issued.record.n, issued.record.r, issued.record.p) == (None, None, None)
    assert not is_slow(issued.record)
    assert ApiKeyRecord.model_validate_json(stored) == issued.record
    salted = issue_key(
        TenantId("acme"),
        key_id="0123456789abcdef",
        token=TOKEN,
        salt=b"\x02" * 16,
        created_at=CREATED,
    )
    assert salted.record.digest != issued.record.digest  # the same secret, another salt


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "cs_0123456789abcdef",
        "cs_0123456789abcdef_",
        "cs_0123456789ABCDEF_" + TOKEN,
        "xx_0123456789abcdef_" + TOKEN,
        "cs_0123456789abcdef_short",
        "cs_0123456789abcdef_" + TOKEN + " ",
        "cs_0123456789abcdef_" + "a" * 129,
    ],
)
def test_what_is_not_shaped_as_a_secret_names_no_key(secret: str) -> None:
    assert key_id_of(secret) is None
    assert not secret_matches(_issued().record, secret)


def test_a_key_is_made_of_well_shaped_parts_only() -> None:
    with pytest.raises(ValueError, match="16 hex digits"):
        _issued(key_id="not-hex")
    with pytest.raises(ValueError, match="URL-safe"):
        _issued(token="has spaces in it and more")  # noqa: S106 (not a password)


def test_a_new_key_is_one_hmac_sha256_of_the_secret_keyed_by_the_salt() -> None:
    issued = _issued()
    expected = hmac.new(b"\x01" * 16, issued.secret.encode(), hashlib.sha256).hexdigest()
    assert issued.record.digest == expected
    assert decode_key_record(issued.record.model_dump_json().encode()) == issued.record


def test_a_version_1_scrypt_record_still_decodes_and_verifies() -> None:
    secret = f"cs_0123456789abcdef_{TOKEN}"
    salt = b"\x03" * 16
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=16, r=8, p=1, dklen=32)
    stored = orjson.dumps(
        {
            "schema_version": 1,
            "key_id": "0123456789abcdef",
            "tenant": "acme",
            "salt": salt.hex(),
            "digest": digest.hex(),
            "kdf": "scrypt",
            "n": 16,
            "r": 8,
            "p": 1,
            "created_at": CREATED.isoformat(),
        }
    )
    record = decode_key_record(stored)
    assert (record.schema_version, record.kdf, record.n) == (2, "scrypt", 16)
    assert is_slow(record)
    assert secret_matches(record, secret)
    assert not secret_matches(record, secret[:-1] + "x")


@pytest.mark.parametrize(
    "changed",
    [
        {"kdf": "scrypt"},  # scrypt without its costs
        {"n": 16, "r": 8, "p": 1},  # costs on a fast record
        {"schema_version": 3},
        {"tenant": "a/b"},  # no tenant id (written past keys create)
        {"tenant": "acme\nforged"},
    ],
)
def test_a_record_of_mixed_schemes_is_refused(changed: dict[str, object]) -> None:
    stored = orjson.loads(_issued().record.model_dump_json()) | changed
    with pytest.raises(ValueError, match=r"kdf|schema_version|union_tag|tenant"):
        decode_key_record(orjson.dumps(stored))


def test_a_secret_naming_no_key_is_refused_after_the_same_hash() -> None:
    assert not no_key_check(f"cs_0123456789abcdef_{TOKEN}")
