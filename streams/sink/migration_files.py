"""The sink's migrations: versioned SQL files shipped in the package, read and checked.

A migration is ``migrations/NNNN_name.sql``; versions run 1, 2, ... with no gap, and each
file's checksum (sha256 of its bytes) is what the runner records and compares.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Final

from streams.sink.errors import MigrationError

#: What a migration file is called: four digits, an underscore, a lower-case name.
FILE_NAME: Final = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    """One migration file: its version, name, SQL text and checksum."""

    version: int
    name: str
    sql: str
    checksum: str

    @property
    def label(self) -> str:
        """``0001_base``: how messages name it."""
        return f"{self.version:04d}_{self.name}"


def migration_of(file_name: str, data: bytes) -> Migration:
    """The migration in file `file_name` with content `data`.

    Raises:
        MigrationError: the name is not ``NNNN_name.sql`` or the file is not UTF-8.
    """
    match = FILE_NAME.match(file_name)
    if match is None:
        raise MigrationError(f"migration file {file_name!r} is not named NNNN_name.sql")
    try:
        sql = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MigrationError(f"migration file {file_name!r} is not UTF-8: {exc}") from None
    return Migration(int(match[1]), match[2], sql, hashlib.sha256(data).hexdigest())


def ordered(migrations: Iterable[Migration]) -> tuple[Migration, ...]:
    """`migrations` by version, which must be 1, 2, ... with none missing or twice.

    Raises:
        MigrationError: a version is missing or given twice.
    """
    result = tuple(sorted(migrations, key=lambda m: m.version))
    for expected, migration in enumerate(result, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"migration versions must run 1, 2, ... without gaps: found {migration.label} "
                f"where version {expected} was expected"
            )
    return result


def load_migrations(folder: Traversable | None = None) -> tuple[Migration, ...]:
    """The migrations of `folder` (default: the ones shipped in ``streams/sink/migrations``)."""
    source = folder if folder is not None else files("streams.sink").joinpath("migrations")
    return ordered(
        migration_of(entry.name, entry.read_bytes())
        for entry in source.iterdir()
        if entry.name.endswith(".sql")
    )


def latest_version(migrations: Sequence[Migration]) -> int:
    """The version a schema has once every one of `migrations` is applied (0: none)."""
    return migrations[-1].version if migrations else 0
