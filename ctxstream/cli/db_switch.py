"""``ctxstream db switch`` and ``ctxstream db status``: the stable views and what they read.

``db switch SCHEMA`` points the stable schema's views (``--stable``, else
``CTXSTREAM_STABLE_SCHEMA``, else ``ctxstream_read``) at SCHEMA in one transaction, once
SCHEMA has caught up with the log's end (read from the broker as ``CTXSTREAM_*`` says) and
with the schema switched from; ``--force`` skips that check. ``db status`` prints which
schema the stable views read and up to where. Refusals are one line, exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable

from psycopg import sql
from pydantic import ValidationError

from ctxstream.cli.common import Subcommands, fail, quiet_loggers
from schemas.errors import CtxstreamError
from streams.sink.database import connect
from streams.sink.replay.log_ends import log_end_offsets
from streams.sink.replay.plan import stable_schema_name
from streams.sink.replay.switch import CatchUp, has_relation, stable_target, switch_stable
from streams.sink.settings import SinkSettings


def add_switch_commands(db_commands: Subcommands, schema_type: Callable[[str], str]) -> None:
    """Add ``switch`` and ``status`` to the ``db`` subcommands (`schema_type` checks names)."""
    switch = db_commands.add_parser(
        "switch", help="point the stable views at SCHEMA in one transaction, once caught up"
    )
    switch.add_argument("target", type=schema_type, metavar="SCHEMA", help="the target schema")
    _stable_arguments(switch, schema_type)
    switch.add_argument(
        "--force", action="store_true", help="switch without checking that SCHEMA caught up"
    )
    switch.add_argument(
        "--columns-may-change",
        action="store_true",
        help="switch even when a view's columns change (a prepared SELECT * of it then fails)",
    )
    switch.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep trying while SCHEMA is behind or readers hold the views (default 0: once)",
    )
    switch.set_defaults(run=_switch)
    status = db_commands.add_parser("status", help="which schema the stable views read")
    _stable_arguments(status, schema_type)
    status.set_defaults(run=_status)


def _stable_arguments(parser: argparse.ArgumentParser, schema_type: Callable[[str], str]) -> None:
    parser.add_argument(
        "--stable",
        type=schema_type,
        default=None,
        metavar="NAME",
        help="the stable schema (default: CTXSTREAM_STABLE_SCHEMA, else ctxstream_read)",
    )
    parser.add_argument(
        "--dsn",
        default=None,
        help="postgresql://user:password@host:port/database (default: CTXSTREAM_POSTGRES_DSN)",
    )


def _switch(args: argparse.Namespace) -> int:
    quiet_loggers(
        {"streams": logging.WARNING, "aiokafka": logging.CRITICAL}
    )  # the switch's line is the output
    try:
        settings = _settings(args)
        asyncio.run(_switch_to(settings, args, _stable(args)))
    except ValidationError as exc:
        return fail("db switch", str(exc), status=2)
    except CtxstreamError as exc:
        return fail("db switch", str(exc))
    return 0


async def _switch_to(settings: SinkSettings, args: argparse.Namespace, stable: str) -> None:
    target, topic = str(args.target), settings.topic("events")
    catch_up = (
        None
        if args.force
        else CatchUp(
            topic,
            await log_end_offsets(
                settings.kafka_bootstrap, topic, security=settings.client_security()
            ),
        )
    )
    conn = await connect(settings.postgres_dsn.get_secret_value())
    try:
        done = await switch_stable(
            conn,
            target,
            stable=stable,
            catch_up=catch_up,
            wait_s=args.wait,
            columns_may_change=args.columns_may_change,
        )
    finally:
        await conn.close()
    plan = done.plan
    sys.stdout.write(
        f"stable schema {stable} reads {target} now (was {done.previous or 'nothing'}; "
        f"migration version {done.version}): {len(plan.replace)} views replaced, "
        f"{len(plan.recreate)} recreated, {len(plan.drop)} dropped\n"
    )


def _status(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
        asyncio.run(_say_status(settings, _stable(args)))
    except ValidationError as exc:
        return fail("db status", str(exc), status=2)
    except CtxstreamError as exc:
        return fail("db status", str(exc))
    return 0


async def _say_status(settings: SinkSettings, stable: str) -> None:
    conn = await connect(settings.postgres_dsn.get_secret_value())
    try:
        current = await stable_target(conn, stable)
        if current is None:
            sys.stdout.write(f"stable schema {stable}: never switched\n")
            return
        sys.stdout.write(
            f"stable schema {stable} reads {current.target} (migration version "
            f"{current.version}) since {current.switched_at.isoformat()}\n"
        )
        if not await has_relation(conn, stable, "consistent_as_of"):
            return
        cursor = await conn.execute(
            sql.SQL(
                "SELECT partition, next_offset FROM {} WHERE topic = %s ORDER BY partition"
            ).format(sql.Identifier(stable, "consistent_as_of")),
            (settings.topic("events"),),
        )
        for partition, next_offset in await cursor.fetchall():
            sys.stdout.write(f"  partition {partition}: consistent as of {next_offset}\n")
    finally:
        await conn.close()


def _settings(args: argparse.Namespace) -> SinkSettings:
    updates = {} if args.dsn is None else {"postgres_dsn": args.dsn}
    return SinkSettings(**updates)


def _stable(args: argparse.Namespace) -> str:
    return str(args.stable) if args.stable is not None else stable_schema_name(os.environ)
