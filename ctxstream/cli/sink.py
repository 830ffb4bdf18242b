"""``ctxstream db migrate`` and ``ctxstream sink``: the SQL read model's schema and its writer.

``db migrate`` applies the migrations a target schema lacks and prints each one applied;
``sink`` runs :func:`streams.sink.worker.run_sink` until SIGTERM or SIGINT (with ``--into``,
``--from-offset 0`` or ``--until-caught-up``: a rebuild, :mod:`streams.sink.replay.rebuild`;
``db switch`` and ``db status``: :mod:`ctxstream.cli.db_switch`). Both take the
DSN from ``--dsn`` or ``CTXSTREAM_POSTGRES_DSN`` and the schema from ``--schema`` or
``CTXSTREAM_SINK_SCHEMA`` (default ``ctxstream``); every refusal is one line, the password
masked, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

import psycopg
from pydantic import ValidationError

from ctxstream.cli.common import Subcommands, fail, non_negative, quiet_loggers
from ctxstream.cli.db_switch import add_switch_commands
from schemas.errors import CtxstreamError
from streams.sink.database import connect
from streams.sink.errors import DatabaseError, TargetSchemaError
from streams.sink.migrate import migrate
from streams.sink.replay.positions import FULL_REBUILD
from streams.sink.replay.rebuild import Rebuild, run_rebuild
from streams.sink.settings import SinkSettings
from streams.sink.target_schema import DEFAULT_SCHEMA, target_schema
from streams.sink.worker import run_sink


def add_sink_commands(commands: Subcommands) -> None:
    """Add ``db migrate`` and ``sink`` to the ``ctxstream`` subcommands."""
    db = commands.add_parser("db", help="manage the SQL read model's database")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    migrate_parser = db_commands.add_parser(
        "migrate", help="apply the migrations the target schema lacks (idempotent)"
    )
    _database_arguments(migrate_parser)
    migrate_parser.set_defaults(run=_migrate)
    sink = commands.add_parser(
        "sink",
        help="write `events` into PostgreSQL exactly once (Kafka settings from CTXSTREAM_*)",
    )
    _database_arguments(sink)
    _rebuild_arguments(sink)
    sink.set_defaults(run=_sink)
    add_switch_commands(db_commands, _schema)


def _database_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dsn",
        default=None,
        help="postgresql://user:password@host:port/database (default: CTXSTREAM_POSTGRES_DSN)",
    )
    parser.add_argument(
        "--schema",
        type=_schema,
        default=None,
        help=f"the target schema (default: CTXSTREAM_SINK_SCHEMA, else {DEFAULT_SCHEMA})",
    )


def _rebuild_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--into",
        type=_schema,
        default=None,
        metavar="SCHEMA",
        help="the schema to rebuild (instead of --schema): migrated first, created if new",
    )
    parser.add_argument(
        "--from-offset",
        type=_from_offset,
        default=None,
        metavar="N",
        help="0: a full rebuild, refused if the schema already holds offsets past 0",
    )
    parser.add_argument(
        "--until-caught-up",
        action="store_true",
        help="exit 0 once the schema reaches the log's end offsets as of the start",
    )


def _from_offset(text: str) -> int:
    offset = non_negative(text)
    if offset != FULL_REBUILD:
        raise argparse.ArgumentTypeError(
            f"{offset}: only 0 is accepted, since each session's statuses need its whole "
            "history (streams/sink/README.md, 'Replay and switch')"
        )
    return offset


def _schema(text: str) -> str:
    try:
        return target_schema(text)
    except TargetSchemaError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _migrate(args: argparse.Namespace) -> int:
    quiet_loggers({"streams": logging.WARNING})  # the applied migrations are the output
    dsn = args.dsn if args.dsn is not None else os.environ.get("CTXSTREAM_POSTGRES_DSN", "")
    try:
        schema = args.schema or target_schema(
            os.environ.get("CTXSTREAM_SINK_SCHEMA", DEFAULT_SCHEMA)
        )
        asyncio.run(_apply(dsn, schema))
    except CtxstreamError as exc:
        return fail("db migrate", str(exc))
    return 0


async def _apply(dsn: str, schema: str) -> None:
    conn = await connect(dsn)
    try:
        applied = await migrate(conn, schema)
    except psycopg.Error as exc:
        raise DatabaseError(f"schema {schema!r}: {str(exc).strip().splitlines()[0]}") from None
    finally:
        await conn.close()
    for migration in applied:
        sys.stdout.write(f"schema {schema}: applied {migration.label}\n")
    if not applied:
        sys.stdout.write(f"schema {schema}: up to date\n")


def _sink(args: argparse.Namespace) -> int:
    if args.into is not None and args.schema is not None:
        return fail("sink", "--into and --schema both name the target schema: give one", status=2)
    updates: dict[str, object] = {}
    if args.dsn is not None:
        updates["postgres_dsn"] = args.dsn
    if (schema := args.into or args.schema) is not None:
        updates["sink_schema"] = schema
    plan = Rebuild(args.into is not None, args.from_offset, args.until_caught_up)
    try:
        settings = SinkSettings(**updates)  # type: ignore[arg-type]
        return run_sink(settings) if plan == Rebuild() else run_rebuild(settings, plan)
    except ValidationError as exc:
        return fail("sink", str(exc), status=2)
    except CtxstreamError as exc:
        return fail("sink", str(exc))
