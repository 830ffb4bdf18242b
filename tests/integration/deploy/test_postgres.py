"""`deploy/postgres/start`: password auth on every connection, owner-only secrets, safe paths.

The cluster of this module lives in a folder whose name holds a single quote, spaces and a
semicolon, so pg_ctl's trip through /bin/sh is exercised on every run: unquoted, the name
would break the server's command line (or run `touch pwned`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.conftest import ServiceError, free_ports, run_deploy

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 300.0  # a first run also installs Debian's postgresql-15
STOP_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10
AWKWARD_NAME = "the cluster's folder; touch pwned"


@dataclass(frozen=True)
class Cluster:
    """A cluster started by deploy/postgres/start, its DSN and where it lives."""

    dsn: str
    folder: Path  # the cluster folder: data/, the socket, the password file
    port: int


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A cluster in a folder the postgres user can reach, so start does not move it elsewhere."""
    parent = Path(tempfile.mkdtemp(prefix="ctxstream-test-pg-", dir="/var/tmp"))
    folder = parent / AWKWARD_NAME / "postgres"
    folder.parent.mkdir()
    # Traversable, not listable, whatever the umask: the postgres user must reach the folder.
    for path in (parent, folder.parent):
        path.chmod(0o711)
    (port,) = free_ports(1)
    env = {"CTXSTREAM_POSTGRES_DIR": str(folder), "CTXSTREAM_POSTGRES_PORT": str(port)}
    try:
        yield Cluster(run_deploy("postgres/start", env=env, timeout=START_TIMEOUT_S), folder, port)
    finally:
        try:
            run_deploy("postgres/stop", env=env, timeout=STOP_TIMEOUT_S)
        finally:
            shutil.rmtree(parent)


@pytest.fixture
def no_stored_password(monkeypatch: pytest.MonkeyPatch) -> None:
    """libpq finds no password but the one a connection string gives."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", os.devnull)


def _connect(conninfo: str) -> str:
    """Connects, runs a query, returns the user the server says this is."""
    with psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        row = conn.execute("SELECT current_user").fetchone()
    assert row is not None
    return str(row[0])


def test_the_cluster_lives_where_asked_with_its_socket_there(cluster: Cluster) -> None:
    # Not moved to /var/tmp/ctxstream-postgres.*: the awkward name reached pg_ctl's shell.
    assert not Path(f"{cluster.folder}.path").exists()
    assert (cluster.folder / f".s.PGSQL.{cluster.port}").is_socket()
    assert not any(path.name == "pwned" for path in cluster.folder.parents[1].rglob("*"))


def test_the_dsn_carries_the_password_kept_in_an_owner_only_file(cluster: Cluster) -> None:
    password_file = cluster.folder / "password"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(cluster.folder.stat().st_mode) == 0o700
    dsn = urlsplit(cluster.dsn)
    assert (dsn.scheme, dsn.username, dsn.hostname, dsn.port, dsn.path) == (
        "postgresql",
        "postgres",
        "127.0.0.1",
        cluster.port,
        "/ctxstream",
    )
    assert dsn.password == password_file.read_text()
    assert len(dsn.password) >= 32


@pytest.mark.usefixtures("no_stored_password")
def test_a_connection_with_the_dsn_succeeds(cluster: Cluster) -> None:
    assert _connect(cluster.dsn) == "postgres"


@pytest.mark.usefixtures("no_stored_password")
@pytest.mark.parametrize(
    ("password", "refusal"),
    [(None, "no password supplied"), ("not-the-password", "password authentication failed")],
)
@pytest.mark.parametrize("over", ["tcp", "socket"])
def test_a_connection_without_the_password_is_refused(
    cluster: Cluster, password: str | None, refusal: str, over: str
) -> None:
    host = "127.0.0.1" if over == "tcp" else str(cluster.folder)
    conninfo = psycopg.conninfo.make_conninfo(
        host=host, port=cluster.port, user="postgres", dbname="ctxstream", password=password
    )
    with pytest.raises(psycopg.OperationalError, match=refusal):
        _connect(conninfo)


def test_stop_refuses_to_delete_a_recorded_path_start_would_not_have_made(
    tmp_path: Path,
) -> None:
    decoy = tmp_path / "precious"
    decoy.mkdir()
    (decoy / "keep").write_text("still here")
    folder = tmp_path / "postgres"
    Path(f"{folder}.path").write_text(f"{decoy}\n")
    env = {"CTXSTREAM_POSTGRES_DIR": str(folder)}
    with pytest.raises(
        ServiceError, match=re.escape("not a /var/tmp/ctxstream-postgres.* folder; refusing")
    ):
        run_deploy("postgres/stop", env=env, timeout=STOP_TIMEOUT_S)
    assert (decoy / "keep").read_text() == "still here"


@pytest.mark.parametrize("name", ["a\nb", "$(touch pwned)", 'a"b', "a`b`", "a\\b", "a,b"])
def test_start_refuses_a_folder_that_pg_ctl_would_hand_to_the_shell_unquoted(
    tmp_path: Path, name: str
) -> None:
    (port,) = free_ports(1)
    env = {"CTXSTREAM_POSTGRES_DIR": str(tmp_path / name), "CTXSTREAM_POSTGRES_PORT": str(port)}
    try:
        with pytest.raises(ServiceError, match="postgres: the cluster folder must not contain"):
            run_deploy("postgres/start", env=env, timeout=START_TIMEOUT_S)
        assert list(tmp_path.iterdir()) == []
    finally:
        run_deploy("postgres/stop", env=env, timeout=STOP_TIMEOUT_S)
