"""Where a process looks for the broker and the read secret when nothing names them."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.kafka.settings import KafkaSettings, default_read_secret_file


@pytest.fixture(autouse=True)
def _no_broker_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CTXSTREAM_KAFKA_BOOTSTRAP", "CTXSTREAM_KAFKA_PORT"):
        monkeypatch.delenv(name, raising=False)


def test_with_nothing_set_the_broker_is_the_local_default_port() -> None:
    assert KafkaSettings().kafka_bootstrap == "127.0.0.1:9092"


def test_a_moved_broker_port_is_where_the_client_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSTREAM_KAFKA_PORT", "19092")

    assert KafkaSettings().kafka_bootstrap == "127.0.0.1:19092"


def test_the_bootstrap_setting_wins_over_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSTREAM_KAFKA_PORT", "19092")
    monkeypatch.setenv("CTXSTREAM_KAFKA_BOOTSTRAP", "10.0.0.5:9092")

    assert KafkaSettings().kafka_bootstrap == "10.0.0.5:9092"


def test_the_read_secret_is_kept_under_the_users_config_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_read_secret_file() == tmp_path / "xdg" / "ctxstream" / "read-secret"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_read_secret_file() == tmp_path / "home" / ".config" / "ctxstream" / "read-secret"
