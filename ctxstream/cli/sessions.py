"""``ctxstream sessions [--tenant T] [--app A] [--json]``: the sessions a deployment holds.

One line per session, sorted by key, from the latest snapshot of each on
`projections` (:mod:`ctxstream.cli.session_listing`): ``KEY: last offset N,
I invocations, C compactions``, or with ``--json`` one JSON object a line
(``session_key``, ``last_offset``, ``invocations``,
``invocations_since_compaction``, ``compactions``, ``summary_event_id``).
The read stops at the topic's end as of the start. No session is no line
(and, without ``--json``, ``no sessions`` on stderr). Each error is one
line on stderr and exit 1 (a broker it cannot reach, no `projections` topic).
With ``--sql`` the SQL read model answers instead, newest first and paged
(``--user``, ``--limit``, ``--cursor``, ``--all``: :mod:`ctxstream.cli.catalog_commands`).
"""

from __future__ import annotations

import argparse
import sys

from ctxstream.cli.catalog_commands import (
    add_page_arguments,
    add_read_model_arguments,
    print_listing,
)
from ctxstream.cli.common import Subcommands, fail, run_command
from ctxstream.cli.session_listing import list_sessions
from schemas.kafka.settings import KafkaSettings

#: The flags only the SQL read model's listing takes, by their ``args`` names.
_SQL_ONLY = {
    "user": "--user",
    "cursor": "--cursor",
    "all": "--all",
    "dsn": "--dsn",
    "schema": "--schema",
}


def add_sessions_command(commands: Subcommands) -> None:
    """Add ``sessions`` to the ``ctxstream`` subcommands."""
    sessions = commands.add_parser(
        "sessions",
        help="list the sessions with a projection: last offset, invocations, compactions "
        "(--sql: from the SQL read model, newest first)",
    )
    sessions.add_argument("--tenant", help="only this tenant's sessions")
    sessions.add_argument("--app", help="only this app's sessions")
    sessions.add_argument("--json", action="store_true", help="print one JSON object a line")
    sessions.add_argument(
        "--sql", action="store_true", help="read the SQL read model: newest first, paged"
    )
    sessions.add_argument("--user", help="only this user's sessions of --app (with --sql)")
    sessions.add_argument("--cursor", help="continue a listing (with --sql)")
    add_page_arguments(sessions)
    add_read_model_arguments(sessions)
    sessions.set_defaults(run=_sessions)


def _sessions(args: argparse.Namespace) -> int:
    if args.sql:
        return print_listing(args)
    for name, flag in _SQL_ONLY.items():
        if getattr(args, name):
            return fail(
                "sessions", f"{flag}: only the read model's listing takes it (--sql)", status=2
            )
    return run_command("sessions", _print_sessions(args))


async def _print_sessions(args: argparse.Namespace) -> None:
    entries = await list_sessions(KafkaSettings(), tenant=args.tenant, app=args.app)
    if args.json:
        sys.stdout.buffer.write(b"".join(entry.json_line() for entry in entries))
    else:
        sys.stdout.write("".join(f"{entry.line()}\n" for entry in entries))
        if not entries:
            sys.stderr.write("no sessions\n")
    sys.stdout.flush()
