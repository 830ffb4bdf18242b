"""The ``ctxstream context``, ``expand``, ``rewind``, ``fork`` and ``delete`` commands.

``context SESSION [--as-of OFFSET] [--agent A] [--branch B] [--json]`` prints
what :meth:`~ctxstream.Client.context` (or, with ``--as-of``,
:meth:`~ctxstream.Client.context_as_of`) returns; ``expand SESSION SUMMARY_ID
[--page-size N] [--json]`` every event :meth:`~ctxstream.Client.expand`
returns, page after page. Text or JSON as :mod:`ctxstream.cli.text` writes
them. ``rewind SESSION INVOCATION [--min-offset OFFSET]`` annuls an invocation
with :meth:`~ctxstream.Client.rewind` (the owner computes ADK's state delta)
and prints the rewind event's offset; ``fork SESSION OFFSET NEW_SESSION``
starts a fork with :meth:`~ctxstream.Client.fork` and prints the fork
record's offset; ``delete SESSION`` prints the offset of the deletion
:meth:`~ctxstream.Client.delete_session` appends. Settings: ``CTXSTREAM_*``.

More in ``ctxstream/cli/README.md`` (reads.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable

from ctxstream.cli.common import Subcommands, run_command
from ctxstream.cli.text import contents_json, contents_text, events_json, events_text
from ctxstream.client import Client
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset
from schemas.read_protocol import DEFAULT_PAGE_SIZE, DEFAULT_READ_WAIT_S


def add_read_commands(commands: Subcommands) -> None:
    """Add ``context``, ``expand``, ``rewind``, ``fork`` and ``delete`` to the subcommands."""
    context = commands.add_parser(
        "context",
        help="print a session's context as its projector assembles it, now or as of an offset",
    )
    context.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    context.add_argument(
        "--as-of",
        type=int,
        metavar="OFFSET",
        help="the context right after the record at OFFSET of the session's partition",
    )
    context.add_argument(
        "--agent", help="the agent it is for (default: the agent ADK would run next)"
    )
    context.add_argument("--branch", help="the invocation branch (default: none)")
    context.add_argument("--json", action="store_true", help="print the contents as JSON")
    _timeout_argument(context)
    context.set_defaults(run=_context)

    expand = commands.add_parser(
        "expand", help="print the original events a summary event of a session covers"
    )
    expand.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    expand.add_argument("summary_id", metavar="SUMMARY_ID", help="the summary event's id")
    expand.add_argument(
        "--page-size",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        metavar="N",
        help=f"events fetched per request (default {DEFAULT_PAGE_SIZE})",
    )
    expand.add_argument("--json", action="store_true", help="print each event as a JSON line")
    _timeout_argument(expand)
    expand.set_defaults(run=_expand)

    rewind = commands.add_parser(
        "rewind", help="annul an invocation of a session and everything after it, as ADK does"
    )
    rewind.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    rewind.add_argument("invocation", metavar="INVOCATION", help="the invocation id to annul")
    rewind.add_argument(
        "--min-offset",
        type=int,
        metavar="OFFSET",
        help="the offset of the session's last append the rewind must see",
    )
    _timeout_argument(rewind)
    rewind.set_defaults(run=_rewind)

    fork = commands.add_parser(
        "fork", help="start a new session as a fork of a session up to an offset of it"
    )
    fork.add_argument("session", metavar="SESSION", help="the source, tenant/app/user/session")
    fork.add_argument(
        "at_offset", metavar="OFFSET", type=int, help="the source's last offset the fork keeps"
    )
    fork.add_argument("new_session", metavar="NEW_SESSION", help="the fork's own session key")
    _timeout_argument(fork)
    fork.set_defaults(run=_fork)

    delete = commands.add_parser(
        "delete", help="delete a session (reads answer not found until an append starts it anew)"
    )
    delete.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    delete.set_defaults(run=_delete)


def _timeout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=DEFAULT_READ_WAIT_S,
        metavar="S",
        help=f"how long each read may take (default {DEFAULT_READ_WAIT_S:g})",
    )


def _context(args: argparse.Namespace) -> int:
    return run_command("context", _print_context(args))


def _expand(args: argparse.Namespace) -> int:
    return run_command("expand", _print_expanded(args))


def _rewind(args: argparse.Namespace) -> int:
    return run_command("rewind", _print_rewound(args))


def _fork(args: argparse.Namespace) -> int:
    return run_command("fork", _print_forked(args))


def _delete(args: argparse.Namespace) -> int:
    return run_command(
        "delete", _print_appended(lambda client: client.delete_session(args.session))
    )


async def _print_forked(args: argparse.Namespace) -> None:
    await _print_appended(
        lambda client: client.fork(
            args.session, args.at_offset, args.new_session, timeout_s=args.timeout_s
        )
    )


async def _print_rewound(args: argparse.Namespace) -> None:
    await _print_appended(
        lambda client: client.rewind(
            args.session, args.invocation, min_offset=args.min_offset, timeout_s=args.timeout_s
        )
    )


async def _print_appended(append: Callable[[Client], Awaitable[Offset]]) -> None:
    """Start a client, `append` through it, stop it, and print the appended record's offset."""
    client = Client(settings=KafkaSettings())
    try:
        await client.start()
        offset = await append(client)
    finally:
        await client.stop()
    sys.stdout.write(f"{offset}\n")
    sys.stdout.flush()


async def _print_context(args: argparse.Namespace) -> None:
    client = Client(settings=KafkaSettings())
    try:
        if args.as_of is None:
            contents = await client.context(
                args.session, agent=args.agent, branch=args.branch, timeout_s=args.timeout_s
            )
        else:
            contents = await client.context_as_of(
                args.session,
                args.as_of,
                agent=args.agent,
                branch=args.branch,
                timeout_s=args.timeout_s,
            )
    finally:
        await client.stop()
    if args.json:
        sys.stdout.buffer.write(contents_json(contents))
    else:
        sys.stdout.write(contents_text(contents))
    sys.stdout.flush()


async def _print_expanded(args: argparse.Namespace) -> None:
    client = Client(settings=KafkaSettings())
    try:
        token: str | None = None
        while True:
            page = await client.expand(
                args.session,
                args.summary_id,
                page_size=args.page_size,
                page_token=token,
                timeout_s=args.timeout_s,
            )
            if args.json:
                sys.stdout.buffer.write(events_json(page.events))
            else:
                sys.stdout.write(events_text(page.events))
            sys.stdout.flush()
            token = page.next_page_token
            if token is None:
                return
    finally:
        await client.stop()
