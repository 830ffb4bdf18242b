"""The ``ctxstream`` command: one entry point for every process and tool."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from streams.settings import KafkaSettings

Command = Callable[[argparse.Namespace], int]


def _topics_create(_: argparse.Namespace) -> int:
    from streams.topics import create_topics

    settings = KafkaSettings()
    result = asyncio.run(create_topics(settings))
    for name in result.created:
        sys.stdout.write(f"created {name}\n")
    for name in result.existing:
        sys.stdout.write(f"exists  {name}\n")
    return 0


def _conformance(args: argparse.Namespace) -> int:
    from streams.conformance_report import run_conformance

    return run_conformance(Path(args.directory), sys.stdout)


def _bench_core(args: argparse.Namespace) -> int:
    from streams.bench_core import report_table, run_core_bench, write_report

    results = run_core_bench(args.sizes, repeats=args.repeats)
    write_report(results, Path(args.json))
    sys.stdout.write(report_table(results))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxstream", description="Context management for LLM agents on Apache Kafka."
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    commands = parser.add_subparsers(dest="command", required=True)

    topics = commands.add_parser("topics", help="manage the deployment's topics")
    topics_commands = topics.add_subparsers(dest="topics_command", required=True)
    create = topics_commands.add_parser(
        "create", help="create the topics idempotently (settings from CTXSTREAM_* variables)"
    )
    create.set_defaults(run=_topics_create)

    conformance = commands.add_parser(
        "conformance", help="replay ADK's conformance vectors (*.jsonl in DIR) against the core"
    )
    conformance.add_argument("directory", metavar="DIR")
    conformance.set_defaults(run=_conformance)

    bench = commands.add_parser("bench", help="measure the pipeline's speed")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True)
    core = bench_commands.add_parser(
        "core", help="time reading, rebuilding and applying on synthetic sessions"
    )
    core.add_argument("--json", required=True, metavar="FILE", help="write the results here")
    core.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100, 1_000, 10_000, 50_000],
        metavar="N",
        help="session lengths in events (default 100 1000 10000 50000)",
    )
    core.add_argument("--repeats", type=int, default=5, help="samples per position (default 5)")
    core.set_defaults(run=_bench_core)
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


if __name__ == "__main__":
    sys.exit(main())
