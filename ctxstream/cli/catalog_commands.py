"""``ctxstream sessions --sql`` and ``ctxstream history``: the SQL read model's session reads.

``sessions --sql --tenant T [--app A [--user U]] [--limit N] [--cursor C | --all] [--json]``
prints a page of the tenant's sessions newest first
(:meth:`~ctxstream.sessions.SessionCatalog.list_sessions`): ``KEY: last activity <UTC time>,
last offset N``, or a JSON object a line; when more follow (and not ``--all``) stderr says
``next page: --cursor C``. ``history SESSION [--after N] [--limit N] [--all] [--min-offset N]
[--json]`` prints the session's stored records in offset order
(:meth:`~ctxstream.sessions.SessionCatalog.history`): a heading per record (its offset and
status, then its timestamp, author, invocation and id) and its parts, or a JSON object a line.
Both read ``--dsn`` / ``CTXSTREAM_POSTGRES_DSN`` and ``--schema`` / ``CTXSTREAM_SINK_SCHEMA``.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

import orjson
from pydantic import ValidationError

from ctxstream.cli.common import Subcommands, non_negative, positive, run_command
from ctxstream.cli.text import events_text
from ctxstream.errors import InvalidArgumentError
from ctxstream.sessions.catalog import DEFAULT_LIMIT, DEFAULT_WAIT_S, SessionCatalog
from ctxstream.sessions.pages import ListedSession, StoredEvent
from schemas.event import Event
from streams.sink.target_schema import DEFAULT_SCHEMA, target_schema


def add_read_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dsn`` and ``--schema``: where the read model is."""
    parser.add_argument(
        "--dsn", help="postgresql://user:password@host:port/database (CTXSTREAM_POSTGRES_DSN)"
    )
    parser.add_argument(
        "--schema",
        type=target_schema,
        help=f"the read model's schema (default: CTXSTREAM_SINK_SCHEMA, else {DEFAULT_SCHEMA})",
    )


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """``--limit`` and ``--all``: the size of a page, and every page."""
    parser.add_argument(
        "--limit", type=positive, default=DEFAULT_LIMIT, help=f"a page (default {DEFAULT_LIMIT})"
    )
    parser.add_argument("--all", action="store_true", help="print every page, not only one")


def add_history_command(commands: Subcommands) -> None:
    """Add ``history`` to the ``ctxstream`` subcommands."""
    history = commands.add_parser(
        "history", help="print a session's records as the SQL read model stores them"
    )
    history.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    history.add_argument(
        "--after", type=non_negative, metavar="OFFSET", help="start after this offset"
    )
    history.add_argument(
        "--min-offset",
        type=non_negative,
        metavar="OFFSET",
        help=f"wait (up to {DEFAULT_WAIT_S:g} s) until the read model holds this offset",
    )
    history.add_argument("--json", action="store_true", help="print each record as a JSON line")
    add_page_arguments(history)
    add_read_model_arguments(history)
    history.set_defaults(run=_history)


def print_listing(args: argparse.Namespace) -> int:
    """Run ``sessions --sql`` for the parsed `args`; the exit status."""
    return run_command("sessions", _print_listing(args))


def _history(args: argparse.Namespace) -> int:
    return run_command("history", _print_history(args))


def _catalog(args: argparse.Namespace) -> tuple[str, str]:
    """The DSN and schema `args` or the environment name."""
    dsn = args.dsn if args.dsn is not None else os.environ.get("CTXSTREAM_POSTGRES_DSN", "")
    if not dsn.strip():
        raise InvalidArgumentError(
            "--dsn: no PostgreSQL DSN: pass --dsn or set CTXSTREAM_POSTGRES_DSN"
        )
    schema = args.schema or target_schema(os.environ.get("CTXSTREAM_SINK_SCHEMA", DEFAULT_SCHEMA))
    return dsn, schema


async def _print_listing(args: argparse.Namespace) -> None:
    if args.tenant is None:
        raise InvalidArgumentError("--tenant: the read model lists one tenant's sessions")
    dsn, schema = _catalog(args)
    cursor: str | None = args.cursor
    printed = 0
    async with SessionCatalog.connect(dsn, schema=schema) as catalog:
        while True:
            page = await catalog.list_sessions(
                args.tenant, app=args.app, user=args.user, limit=args.limit, cursor=cursor
            )
            _write(page.sessions, args.json)
            printed += len(page.sessions)
            cursor = page.next_cursor
            if cursor is None or not args.all:
                break
    if cursor is not None:
        sys.stderr.write(f"next page: --cursor {cursor}\n")
    elif printed == 0 and not args.json:
        sys.stderr.write("no sessions\n")


async def _print_history(args: argparse.Namespace) -> None:
    dsn, schema = _catalog(args)
    after: int | None = args.after
    async with SessionCatalog.connect(dsn, schema=schema) as catalog:
        min_offset = args.min_offset
        while True:
            page = await catalog.history(
                args.session, after=after, limit=args.limit, min_offset=min_offset
            )
            min_offset = None
            _write(page.events, args.json)
            after = page.next_after
            if after is None or not args.all:
                break
    if after is not None:
        sys.stderr.write(f"next page: --after {after}\n")


def _write(entries: list[ListedSession] | list[StoredEvent], as_json: bool) -> None:
    for entry in entries:
        if as_json:
            sys.stdout.buffer.write(orjson.dumps(entry.model_dump(mode="json")) + b"\n")
        elif isinstance(entry, ListedSession):
            sys.stdout.write(f"{_listed_line(entry)}\n")
        else:
            sys.stdout.write(_stored_text(entry))
    sys.stdout.flush()


def _listed_line(entry: ListedSession) -> str:
    """``acme/support/u1/s1: last activity 2024-05-01T12:00:00+00:00, last offset 41``."""
    when = datetime.fromtimestamp(entry.last_activity, UTC).isoformat()
    return f"{entry.session_key}: last activity {when}, last offset {entry.last_offset}"


def _stored_text(entry: StoredEvent) -> str:
    """``offset 7 live: @100.0 user invocation=inv1 id=e1`` and the event's parts."""
    heading = f"offset {entry.offset} {entry.status}{' (lossy)' if entry.lossy else ''}"
    try:
        text = events_text([Event.model_validate(entry.event)])
    except ValidationError:
        return f"{heading}: {orjson.dumps(entry.event).decode()}\n"
    return f"{heading}: {text}"
