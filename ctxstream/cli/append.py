"""``ctxstream append SESSION [EVENT]``: append events from the command line; their offsets.

The events are ADK's JSON, as :meth:`~ctxstream.Client.append` takes them:
one JSON object (the argument, or standard input when there is none or it is
``-``; it may span lines), or JSON lines, one event a line. Several are
appended with :meth:`~ctxstream.Client.append_many`: in order, all or none.
Each offset is printed on a line of its own, in the events' order; pass the
last as ``--min-offset`` or ``min_offset`` to read the session with them in.
Each error is one line on stderr: exit 2 for input the client refuses (not
JSON, not an object, an event or key that is not valid), 1 for a broker it
cannot use.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from ctxstream.broker_calls import broker_calls
from ctxstream.cli.common import Subcommands, run_command
from ctxstream.client import Client
from ctxstream.errors import InvalidArgumentError
from ctxstream.subscription import CONNECT_TIMEOUT_S
from schemas.kafka.settings import KafkaSettings


def add_append_command(commands: Subcommands) -> None:
    """Add ``append`` to the ``ctxstream`` subcommands."""
    append = commands.add_parser(
        "append",
        help="append events (ADK's JSON: one object, or JSON lines) to a session; "
        "prints each offset",
    )
    append.add_argument("session", metavar="SESSION", help="tenant/app/user/session")
    append.add_argument(
        "event",
        metavar="EVENT",
        nargs="?",
        default="-",
        help="the event's JSON, or JSON lines of several (default '-': read standard input)",
    )
    append.set_defaults(run=_append)


def _append(args: argparse.Namespace) -> int:
    return run_command("append", _print_offsets(args.session, args.event))


async def _print_offsets(session_key: str, source: str) -> None:
    text = sys.stdin.read() if source == "-" else source
    events = parsed_events(text)
    settings = KafkaSettings()
    client = Client(settings=settings)
    try:
        async with broker_calls(settings.kafka_bootstrap, CONNECT_TIMEOUT_S):
            await client.start()
        offsets = await client.append_many(session_key, events)
    finally:
        await client.stop()
    sys.stdout.write("".join(f"{offset}\n" for offset in offsets))
    sys.stdout.flush()


def parsed_events(text: str) -> list[dict[str, Any]]:
    """The events of `text`: one JSON object, or JSON lines of objects (blank lines skipped).

    Raises:
        InvalidArgumentError: Nothing to append, or a line that is not a JSON object
            (named by its number).
    """
    try:
        whole = orjson.loads(text)
    except orjson.JSONDecodeError:
        whole = None  # JSON lines, or no JSON: each line says which
    if isinstance(whole, dict):
        return [whole]
    if whole is not None:
        raise InvalidArgumentError(
            f"expected an event (a JSON object) or JSON lines of events, not a JSON "
            f"{type(whole).__name__}"
        )
    events: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InvalidArgumentError(f"line {number}: not JSON ({exc})") from exc
        if not isinstance(event, dict):
            raise InvalidArgumentError(f"line {number}: an event is a JSON object")
        events.append(event)
    if not events:
        raise InvalidArgumentError("no event given: pass its JSON, or JSON lines on stdin")
    return events
