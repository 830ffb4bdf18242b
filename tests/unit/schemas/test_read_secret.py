"""The read secret: found in the environment or a file the first process creates."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import SecretStr

from schemas.kafka.settings import KafkaSettings
from schemas.read_secret import ReadSecretError, derived_keys, read_keys, read_secret


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


def test_each_key_is_the_hmac_of_its_purpose_as_openssl_computes_it() -> None:
    # printf 'ctxstream read endpoint v1' | openssl dgst -sha256 -hmac "$SECRET" (and claim v1)
    keys = derived_keys(b"k3y-0123456789abcdef0123456789abcdef")
    assert keys.credential == "decfca6a566a6673fc72b91b8d4d51eeb4f38f09293d2614b69b5bdc5d0a1e87"
    assert keys.claims.hex() == "670a5c39411ff23ab808d30423aa9fa3e2646084b7caab336c032cc7d70e1c9c"


def test_a_header_that_cannot_be_encoded_is_refused_not_raised() -> None:
    keys = derived_keys(b"s" * 40)
    assert not keys.admits("Bearer \ud800" + keys.credential[1:])  # a lone surrogate


def test_a_secret_of_exactly_the_fewest_characters_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "exact"
    path.write_text("x" * 32 + "\n", encoding="utf-8")
    assert read_secret(KafkaSettings(read_secret_file=path)) == b"x" * 32


def test_an_unreadable_file_is_refused_with_its_path_and_why(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(ReadSecretError, match=f"read secret file {folder}: .*Is a directory"):
        read_secret(KafkaSettings(read_secret_file=folder))


def test_a_new_secret_goes_into_a_private_folder_made_for_it_or_into_one_there(
    tmp_path: Path,
) -> None:
    made = tmp_path / "new" / "read-secret"
    assert len(read_secret(KafkaSettings(read_secret_file=made))) == 64
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    there = tmp_path / "there"
    there.mkdir()
    there.chmod(0o755)  # whatever the umask
    assert len(read_secret(KafkaSettings(read_secret_file=there / "read-secret"))) == 64
    assert stat.S_IMODE(there.stat().st_mode) == 0o755  # a folder that was there is left as it is


def test_a_new_secret_is_linked_into_place_from_a_hidden_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked: list[tuple[Path, Path]] = []
    link = os.link

    def recorded(source: str, target: Path) -> None:
        linked.append((Path(source), Path(target)))
        link(source, target)

    monkeypatch.setattr(os, "link", recorded)
    path = tmp_path / "conf" / "read-secret"
    read_secret(KafkaSettings(read_secret_file=path))
    ((source, target),) = linked
    assert target == path
    assert source.parent == path.parent  # one filesystem: the link is atomic
    assert source.name.startswith(".read-secret-")  # hidden while it is being written
    assert not source.exists()


def test_the_deployments_keys_are_those_of_its_secret(tmp_path: Path) -> None:
    settings = KafkaSettings(read_secret=SecretStr("k" * 40), read_secret_file=tmp_path / "none")
    assert read_keys(settings) == derived_keys(b"k" * 40)
    path = tmp_path / "file"
    path.write_text("f" * 48 + "\n", encoding="utf-8")
    assert read_keys(KafkaSettings(read_secret_file=path)) == derived_keys(b"f" * 48)
