"""The ``ctxstream`` command: one entry point for every process and tool.

Each command module registers its own subcommands with a hook
(:data:`COMMANDS`; every benchmark under ``bench`` with its module's
``add_parser``, :data:`BENCHMARKS`), in the order ``--help`` lists them; the chosen one runs
with the parsed arguments and returns the exit status. ``cli/README.md`` lists
the commands and their modules.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Final

from ctxstream.api.commands import add_api_commands
from ctxstream.bench import (
    append,
    compaction,
    core,
    fold,
    ingest,
    memory,
    neighbours,
    reads,
    restore,
    sink,
)
from ctxstream.bench.adk import command as adk
from ctxstream.bench.demo import add_demo_command
from ctxstream.cli.append import add_append_command
from ctxstream.cli.catalog_commands import add_history_command
from ctxstream.cli.common import Subcommands
from ctxstream.cli.conformance import add_conformance_command
from ctxstream.cli.pipeline import add_summarizer_command, add_topics_command, add_worker_command
from ctxstream.cli.reads import add_read_commands
from ctxstream.cli.replay import add_replay_command
from ctxstream.cli.sessions import add_sessions_command
from ctxstream.cli.sink import add_sink_commands
from ctxstream.cli.tail import add_tail_command
from ctxstream.cli.up import add_up_command

Command = Callable[[argparse.Namespace], int]


def _add_bench_commands(commands: Subcommands) -> None:
    """Add ``bench`` and, under it, every benchmark of :data:`BENCHMARKS`."""
    bench = commands.add_parser("bench", help="measure the pipeline's speed")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True)
    for add_benchmark in BENCHMARKS:
        add_benchmark(bench_commands)


#: The hooks that add the subcommands, in the order ``ctxstream --help`` lists them.
COMMANDS: Final[tuple[Callable[[Subcommands], None], ...]] = (
    add_topics_command,
    add_conformance_command,
    add_summarizer_command,
    add_worker_command,
    add_sink_commands,  # db migrate, sink
    add_tail_command,
    add_api_commands,  # serve, keys
    add_read_commands,  # context, expand, rewind, fork, delete
    add_append_command,
    add_sessions_command,
    add_history_command,
    add_replay_command,
    add_up_command,
    add_demo_command,
    _add_bench_commands,
)
#: Each benchmark's hook (its module's ``add_parser``), in the order ``bench --help`` lists them.
BENCHMARKS: Final = (
    core.add_parser,
    ingest.add_parser,
    fold.add_parser,
    append.add_parser,
    restore.add_parser,
    reads.add_parser,
    neighbours.add_parser,
    compaction.add_parser,
    memory.add_parser,
    sink.add_parser,
    adk.add_parser,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxstream", description="Context management for LLM agents on Apache Kafka."
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    commands = parser.add_subparsers(dest="command", required=True)
    for add_commands in COMMANDS:
        add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``ctxstream`` command and return its exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    run: Command = args.run
    return run(args)
