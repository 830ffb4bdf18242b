"""``ctxstream bench adk``'s command line; google.adk is imported only when it runs.

``ctxstream --help`` works without the ``adk`` extra: :func:`add_parser` registers the
command, and :func:`_run` imports the benchmark (:mod:`ctxstream.bench.adk.run`) when asked.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import asdict
from pathlib import Path

from ctxstream.bench.report import figures_json, write_report
from ctxstream.cli.common import Subcommands, positive


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``adk`` to the ``bench`` subcommands."""
    parser = bench_commands.add_parser(
        "adk",
        help="an ADK turn (get_session and contents) on ctxstream and on ADK's SQLite services",
    )
    parser.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    parser.add_argument(
        "--events", type=positive, nargs="+", default=[100, 10_000], help="session sizes"
    )
    parser.add_argument("--turns", type=positive, default=5, help="timed turns per service")
    parser.add_argument("--appends", type=positive, default=50, help="timed append_event calls")
    parser.add_argument(
        "--baselines-only", action="store_true", help="ADK's services only (ctxstream's: null)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the sink schema")
    parser.add_argument("--dsn", default=None, help="default: $CTXSTREAM_POSTGRES_DSN")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from ctxstream.bench.adk.run import AdkBenchConfig, report_text, run_adk_bench
    except ImportError as exc:
        sys.stderr.write(f"bench adk: needs the adk extra (google-adk[db]): {exc}\n")
        return 2
    dsn = args.dsn or os.environ.get("CTXSTREAM_POSTGRES_DSN")
    if not dsn and not args.baselines_only:
        sys.stderr.write("bench adk: give --dsn or set CTXSTREAM_POSTGRES_DSN\n")
        return 2
    config = AdkBenchConfig(
        events=tuple(args.events),
        turns=args.turns,
        appends=args.appends,
        baselines_only=args.baselines_only,
        keep=args.keep,
    )
    results = asyncio.run(run_adk_bench(config, dsn, Path(".run")))
    figures = figures_json({"results": [asdict(result) for result in results]})
    write_report(args.json, figures, report_text(results), sys.stdout)
    return 0
