"""The ``ctxstream replay`` command: projections rebuilt into another namespace, with a bar.

``replay TARGET_PREFIX [--from-offset N | --from-time T] [--session KEY ...]``
runs :meth:`~ctxstream.Client.replay` on the deployment the ``CTXSTREAM_*``
variables name (the projector's settings from the same variables), draws its
progress on stderr as one line redrawn in place (on a terminal; elsewhere one
line at the end), and prints one summary line
on stdout: sessions, records, where they went and how long it took.

Each error is one line on stderr and a non-zero exit, as the read commands
do (:mod:`ctxstream.cli.reads`): 2 for an argument refused, 1 for a
broker it cannot reach or a deployment without an `events` topic.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from datetime import datetime
from typing import Final, TextIO

from ctxstream.cli.common import Subcommands, run_command
from ctxstream.client import Client
from ctxstream.errors import InvalidArgumentError
from ctxstream.replay import ReplayProgress, ReplayReport
from schemas.counted import counted
from schemas.kafka.settings import KafkaSettings

#: Cells of the bar.
BAR_WIDTH: Final = 30
#: The least time between two redraws, so a fast replay does not spend it writing.
REDRAW_S: Final = 0.1


def add_replay_command(commands: Subcommands) -> None:
    """Add ``replay`` to the ``ctxstream`` command's subcommands."""
    replay = commands.add_parser(
        "replay",
        help="rebuild the projections from the events log into another namespace "
        "(TARGET_PREFIX.projections), leaving the live ones untouched",
    )
    replay.add_argument(
        "target_prefix", metavar="TARGET_PREFIX", help="the namespace to write (a topic prefix)"
    )
    replay.add_argument(
        "--from-offset",
        type=int,
        metavar="N",
        help="start at offset N of every events partition (default 0: the whole log)",
    )
    replay.add_argument(
        "--from-time",
        metavar="T",
        help="start at the first record written at or after T: ISO 8601 with its "
        "timezone (2025-01-31T12:00:00+00:00) or seconds since the epoch",
    )
    replay.add_argument(
        "--session",
        action="append",
        metavar="KEY",
        help="only this session (tenant/app/user/session); repeat for several",
    )
    replay.set_defaults(run=_replay)


def _replay(args: argparse.Namespace) -> int:
    return run_command("replay", _replayed(args))


async def _replayed(args: argparse.Namespace) -> None:
    from_time = None if args.from_time is None else parse_time(args.from_time)
    bar = ProgressBar(sys.stderr)
    try:
        report = await Client(settings=KafkaSettings()).replay(
            args.target_prefix,
            from_offset=args.from_offset,
            from_time=from_time,
            sessions=args.session,
            progress=bar.draw,
        )
    finally:
        bar.close()
    sys.stdout.write(summary(report) + "\n")
    sys.stdout.flush()


def parse_time(text: str) -> datetime | float:
    """``--from-time``'s value: seconds since the epoch, or an ISO 8601 time.

    A time without its timezone is passed on as it is, for the client to refuse.

    Raises:
        InvalidArgumentError: It is neither.
    """
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(
            f"from_time: {text[:60]!r} is neither an ISO 8601 time nor seconds since the epoch"
        ) from None


def summary(report: ReplayReport) -> str:
    """The command's last line: what was rebuilt, where, how fast."""
    return (
        f"replayed {counted(report.sessions, 'session')}, "
        f"{counted(report.records, 'record')} into "
        f"{report.target_prefix}.projections in {report.seconds:.2f} s "
        f"({counted(report.snapshots, 'snapshot')}, "
        f"{counted(report.requests, 'compaction request')}, "
        f"{counted(report.dead_letters, 'dead letter')})"
    )


class ProgressBar:
    """A replay's progress as one line of `out`, redrawn in place with a carriage return.

    Example: ``[###############---------------]  50%  1200/2400 offsets``.

    Only a terminal sees it redrawn: into a file or a pipe, where a carriage
    return is noise, the bar is written once, at the end.
    """

    def __init__(self, out: TextIO, *, terminal: bool | None = None) -> None:
        """A bar on `out`; `terminal` None: whether `out` is one (``isatty``)."""
        self._out = out
        self._terminal = out.isatty() if terminal is None else terminal
        self._drawn_at = -math.inf
        self._drawn = False

    def draw(self, progress: ReplayProgress) -> None:
        """Redraw for `progress`; at most every :data:`REDRAW_S`, except at the end."""
        now = time.monotonic()
        done, total = progress.done, progress.total
        if done < total and (not self._terminal or now - self._drawn_at < REDRAW_S):
            return
        self._drawn_at = now
        share = 1.0 if total == 0 else done / total
        filled = round(share * BAR_WIDTH)
        cells = "#" * filled + "-" * (BAR_WIDTH - filled)
        start = "\r" if self._terminal else ""
        self._out.write(f"{start}[{cells}] {share:4.0%}  {done}/{total} offsets")
        if not self._terminal:
            self._out.write("\n")
        self._out.flush()
        self._drawn = self._terminal

    def close(self) -> None:
        """End the bar's line, if one was drawn, so what follows starts on a line of its own."""
        if self._drawn:
            self._out.write("\n")
            self._out.flush()
            self._drawn = False
