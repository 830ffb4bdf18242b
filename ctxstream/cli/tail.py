"""``ctxstream tail``: a tenant's projection snapshots as JSON lines, as they are committed.

Each line is ``{"partition", "offset", "snapshot"}`` (:meth:`ctxstream.Subscribed.to_json`),
until Ctrl-C; ``--session`` (repeatable) keeps only those sessions, ``--from-offset N``
starts at offset N of every partition. A failure is one line on stderr: status 2 for
a refused argument, 1 for a broker it cannot use.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from typing import Final

from aiokafka.errors import KafkaError

from ctxstream.cli.common import Subcommands, fail, quiet_loggers
from ctxstream.client import Client
from ctxstream.errors import InvalidArgumentError
from schemas.errors import CtxstreamError
from schemas.kafka.settings import KafkaSettings

#: Loggers ``tail`` quiets: its standard error carries its own failure line only.
TAIL_QUIET_LOGGERS: Final = {"aiokafka": logging.CRITICAL, "ctxstream": logging.WARNING}


def add_tail_command(commands: Subcommands) -> None:
    """Add ``tail`` to the ``ctxstream`` subcommands."""
    tail = commands.add_parser(
        "tail",
        help="print a tenant's projection snapshots as JSON lines (partition, offset, "
        "snapshot) as they are committed, until Ctrl-C",
    )
    tail.add_argument("--tenant", help="the tenant (default: the tenant of --session)")
    tail.add_argument(
        "--session",
        action="append",
        metavar="KEY",
        help="only this session (tenant/app/user/session); repeat for several",
    )
    tail.add_argument(
        "--from-offset",
        type=int,
        metavar="N",
        help="start at offset N of every partition (0: from the beginning; "
        "default: only snapshots committed from now on)",
    )
    tail.set_defaults(run=_tail)


def _tail(args: argparse.Namespace) -> int:
    """Print the snapshots as JSON lines until Ctrl-C; any failure is one line on stderr."""
    # The command reports a broker it cannot use in one line of its own; aiokafka would
    # log each failed attempt around it, and the subscription its start (INFO).
    quiet_loggers(TAIL_QUIET_LOGGERS)
    sessions: list[str] | None = args.session
    tenant: str | None = args.tenant
    if tenant is None:
        if not sessions:
            return fail("tail", "give --tenant, or --session with a session key", status=2)
        tenant = sessions[0].split("/", 1)[0]
    try:
        asyncio.run(_tail_lines(KafkaSettings(), tenant, sessions, args.from_offset))
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, with nothing left to flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except InvalidArgumentError as exc:
        return fail("tail", str(exc), status=2)
    except (CtxstreamError, KafkaError) as exc:
        return fail("tail", str(exc) or type(exc).__name__)
    return 0


async def _tail_lines(
    settings: KafkaSettings, tenant: str, sessions: list[str] | None, from_offset: int | None
) -> None:
    items = Client(settings=settings).subscribe(tenant, sessions=sessions, from_offset=from_offset)
    async with contextlib.aclosing(items):
        async for item in items:
            sys.stdout.buffer.write(item.to_json() + b"\n")
            sys.stdout.flush()
