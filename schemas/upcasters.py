"""Lift records written under older schema versions to the current one. Pure.

A schema change is a new version plus an upcaster here, never an edit of an
old shape: readers are deployed before writers, and every released version
keeps a golden file in `tests/fixtures/` that must still decode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

RecordKind = Literal["envelope", "compaction_request", "projection_snapshot", "dead_letter"]
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class UnknownSchemaVersionError(ValueError):
    """A record names a schema version this reader cannot lift or read."""


def _envelope_v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    # v1 had no `tenant`; it is the first segment of the session key.
    session_key = record.get("session_key")
    if not isinstance(session_key, str):
        raise TypeError("v1 envelope without a string session_key")
    return {**record, "schema_version": 2, "tenant": session_key.split("/", 1)[0]}


UPCASTERS: Final[Mapping[RecordKind, Mapping[int, Upcaster]]] = {
    "envelope": {1: _envelope_v1_to_v2},
    "compaction_request": {},
    "projection_snapshot": {},
    "dead_letter": {},
}

CURRENT_VERSION: Final[Mapping[RecordKind, int]] = {
    "envelope": 2,
    "compaction_request": 1,
    "projection_snapshot": 1,
    "dead_letter": 1,
}


def upcast(kind: RecordKind, record: dict[str, Any]) -> dict[str, Any]:
    """The record lifted, one version at a time, to the current version of its kind.

    A record without ``schema_version`` is taken as version 1.

    Raises:
        UnknownSchemaVersionError: the version is not an integer, is newer than
            this reader, or has no upcaster.
    """
    version = record.get("schema_version", 1)
    current = CURRENT_VERSION[kind]
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnknownSchemaVersionError(f"schema_version must be an integer, got {version!r}")
    if version > current:
        raise UnknownSchemaVersionError(
            f"unknown schema_version {version} for {kind} (this reader knows 1..{current}); "
            "deploy the newer reader first"
        )
    steps = UPCASTERS[kind]
    while version < current:
        step = steps.get(version)
        if step is None:
            raise UnknownSchemaVersionError(f"no upcaster for {kind} schema_version {version}")
        record = step(record)
        version = record["schema_version"]
    return record
