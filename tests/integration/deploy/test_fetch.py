"""`deploy/kafka/fetch` uses a jar folder only when it equals the committed `jars.sha256`."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import DEPLOY, REPO, ServiceError, run_deploy

pytestmark = pytest.mark.integration

FETCH_TIMEOUT_S = 300.0  # the first fetch downloads the jars
HASHES = DEPLOY / "kafka" / "jars.sha256"
REFUSED = re.escape("the jars in ") + r".* differ from " + re.escape(str(HASHES))


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    """A copy of the fetched jar folder and its stamp, which fetch takes as up to date."""
    run_deploy("kafka/fetch", timeout=FETCH_TIMEOUT_S)
    fetched = Path(os.environ.get("CTXSTREAM_KAFKA_LIB", REPO / ".kafka" / "lib"))
    copy = tmp_path / "lib"
    shutil.copytree(fetched, copy)
    shutil.copy(f"{fetched}.stamp", f"{copy}.stamp")
    return copy


def _fetch(lib: Path) -> str:
    return run_deploy("kafka/fetch", env={"CTXSTREAM_KAFKA_LIB": str(lib)}, timeout=FETCH_TIMEOUT_S)


def test_the_committed_list_names_every_jar_sorted() -> None:
    lines = HASHES.read_text().splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    assert all(re.fullmatch(r"[0-9a-f]{64}  [\w.-]+\.jar", line) for line in lines)
    assert names == sorted(names)
    assert any(name.startswith("kafka_2.13-") for name in names)


def test_an_untouched_jar_folder_is_accepted(lib: Path) -> None:
    assert _fetch(lib) == ""


def test_a_changed_jar_is_refused(lib: Path) -> None:
    with (lib / "kafka-clients-3.9.2.jar").open("ab") as jar:
        jar.write(b"\0")
    with pytest.raises(ServiceError, match=REFUSED) as refused:
        _fetch(lib)
    assert "kafka-clients-3.9.2.jar" in str(refused.value)


def test_an_extra_jar_is_refused(lib: Path) -> None:
    (lib / "extra.jar").write_bytes(b"PK")
    with pytest.raises(ServiceError, match=REFUSED) as refused:
        _fetch(lib)
    assert "extra.jar" in str(refused.value)


def test_a_missing_jar_is_refused(lib: Path) -> None:
    (lib / "reload4j-1.2.25.jar").unlink()
    with pytest.raises(ServiceError, match=REFUSED) as refused:
        _fetch(lib)
    assert "reload4j-1.2.25.jar" in str(refused.value)
