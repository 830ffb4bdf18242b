"""Migration files: names, ordering and the shipped set."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from streams.sink.errors import MigrationError
from streams.sink.migration_files import load_migrations, migration_of, ordered

MIGRATIONS = Path(__file__).resolve().parents[4] / "streams" / "sink" / "migrations"


def test_the_shipped_migrations_are_the_folder_s_files_with_their_sha256() -> None:
    files = sorted(MIGRATIONS.glob("*.sql"))
    loaded = load_migrations()

    assert [m.label + ".sql" for m in loaded] == [f.name for f in files]
    assert [m.checksum for m in loaded] == [
        hashlib.sha256(f.read_bytes()).hexdigest() for f in files
    ]
    assert loaded[0].label == "0001_base"


@pytest.mark.parametrize("name", ["1_base.sql", "0001-base.sql", "0001_Base.sql", "0001_base.txt"])
def test_a_badly_named_file_is_refused(name: str) -> None:
    with pytest.raises(MigrationError, match=r"is not named NNNN_name\.sql"):
        migration_of(name, b"SELECT 1;")


def test_a_file_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(MigrationError, match="is not UTF-8"):
        migration_of("0001_base.sql", b"\xff")


def test_versions_must_run_from_one_without_gaps() -> None:
    one, three = migration_of("0001_a.sql", b""), migration_of("0003_c.sql", b"")

    assert ordered([migration_of("0002_b.sql", b""), one])[0] is one
    with pytest.raises(MigrationError, match="found 0003_c where version 2 was expected"):
        ordered([three, one])
    with pytest.raises(MigrationError, match="where version 2 was expected"):
        ordered([one, migration_of("0001_again.sql", b"")])
