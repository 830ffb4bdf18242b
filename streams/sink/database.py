"""The sink's connection to PostgreSQL: opened in autocommit mode, failures said in one line.

Every transaction of the sink is explicit (``conn.transaction()``); between them no
transaction stays open.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import psycopg
from psycopg.conninfo import conninfo_to_dict

from schemas.masked_dsn import masked_dsn
from streams.sink.errors import DatabaseError

Connection: TypeAlias = psycopg.AsyncConnection[tuple[Any, ...]]
"""An async psycopg connection whose rows are tuples."""


async def connect(dsn: str) -> Connection:
    """An autocommit connection to `dsn`.

    Raises:
        DatabaseError: no DSN, a malformed one, or a server that cannot be reached or
            refuses the login; the message shows the DSN with its password masked.
    """
    if not dsn.strip():
        raise DatabaseError(
            "no PostgreSQL DSN: set CTXSTREAM_POSTGRES_DSN or pass --dsn "
            "(postgresql://user:password@host:port/database)"
        )
    try:
        return await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot connect to {masked_dsn(dsn)}: {_said(exc, dsn)}") from None


def _said(exc: psycopg.Error, dsn: str) -> str:
    """The error's first line, with the DSN's password (if any) masked."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        password = None
    return line.replace(str(password), "***") if password else line
