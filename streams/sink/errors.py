"""What the sink refuses, each error saying what was wrong."""

from __future__ import annotations

from collections.abc import Mapping

from schemas.errors import CtxstreamError


class DatabaseError(CtxstreamError):
    """PostgreSQL cannot be reached, refuses the login, or no DSN was given."""


class MigrationError(CtxstreamError):
    """A migration cannot be applied: a bad file, a changed checksum, a missing extension."""


class SchemaVersionError(CtxstreamError):
    """The target schema is not at the version this code expects (older, newer, or changed)."""


class TargetSchemaError(CtxstreamError, ValueError):
    """A target schema name the sink does not accept, or a schema holding another topic."""


class FenceError(CtxstreamError):
    """A batch does not start where the database says its partitions stand.

    Another sink (or an earlier run of this one) committed past the batch's start,
    or the batch is stale. Nothing of the batch was written; the consumer seeks to
    :attr:`stored` (partition -> next offset) and goes on from there.
    """

    retriable = True

    def __init__(
        self, topic: str, stored: Mapping[int, int], starts: Mapping[int, int], why: str = ""
    ) -> None:
        self.topic = topic
        self.stored = dict(stored)
        self.starts = dict(starts)
        differing = "; ".join(
            f"partition {p}: the batch starts at {starts[p]}, the stored next offset is {n}"
            for p, n in sorted(self.stored.items())
            if starts.get(p) != n
        )
        super().__init__(f"{topic}: batch fenced ({why or differing})")
