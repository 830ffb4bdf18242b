"""The target schema: the name every sink table lives under, checked once. Pure."""

from __future__ import annotations

import re
from typing import Final

from streams.sink.errors import TargetSchemaError

#: The schema ``ctxstream db migrate`` and ``ctxstream sink`` use unless told otherwise.
DEFAULT_SCHEMA: Final = "ctxstream"
#: Lower-case letters, digits and underscores, a letter or underscore first, at most 63
#: characters (PostgreSQL's identifier length): the same name in SQL, in a consumer group
#: id and in a log line, with no quoting surprises.
_NAME: Final = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def target_schema(name: str) -> str:
    """`name` once it is a schema name the sink accepts.

    Example: ``"ctxstream"`` and ``"replay_2"`` pass; ``"Ctx"``, ``"a-b"`` and ``"pg_x"`` raise.

    Raises:
        TargetSchemaError: not lower-case letters, digits and underscores, too long, or a
            name PostgreSQL reserves (``pg_...``, ``information_schema``, ``public``).
    """
    if not _NAME.match(name):
        raise TargetSchemaError(
            f"schema name {name!r}: use 1 to 63 lower-case letters, digits and underscores, "
            "starting with a letter or underscore"
        )
    if name.startswith("pg_") or name in {"information_schema", "public"}:
        raise TargetSchemaError(f"schema name {name!r} is PostgreSQL's own; choose another")
    return name


def group_id(topic_prefix: str, schema: str) -> str:
    """The sink's consumer group for one target schema: ``<prefix>-sink-<schema>``."""
    return f"{topic_prefix}-sink-{schema}"
