"""The read secret: found in the environment or a file the first process creates."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import SecretStr

from schemas.kafka.settings import KafkaSettings
from schemas.read_secret import ReadSecretError, derived_keys, read_secret


def test_a_missing_file_is_created_private_once_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "config" / "ctxstream" / "read-secret"
    settings = KafkaSettings(read_secret_file=path)
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: read_secret(settings), range(32)))
    assert len(secrets) == 1  # every racing reader got the one secret that was linked
    (secret,) = secrets
    assert len(secret) == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["read-secret"]  # no temporary left
    assert read_secret(settings) == secret


def test_the_environment_wins_and_a_short_secret_is_refused(tmp_path: Path) -> None:
    given = KafkaSettings(read_secret=SecretStr("s" * 40), read_secret_file=tmp_path / "none")
    assert read_secret(given) == b"s" * 40
    assert not (tmp_path / "none").exists()
    with pytest.raises(ValueError, match="at least 32"):
        KafkaSettings(read_secret=SecretStr("short"))
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(ReadSecretError, match="3 characters, at least 32"):
        read_secret(KafkaSettings(read_secret_file=short))


def test_the_credential_and_the_claim_key_differ_and_only_the_credential_is_admitted() -> None:
    keys = derived_keys(b"s" * 40)
    assert keys.credential.encode() != keys.claims.hex().encode()
    assert keys.admits(keys.authorization)
    assert not keys.admits(None)
    assert not keys.admits("Bearer " + "s" * 40)  # the secret itself is not the credential
    assert not keys.admits(keys.credential)
    assert not derived_keys(b"t" * 40).admits(keys.authorization)
