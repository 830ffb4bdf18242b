"""The ``ctxstream`` command: one entry point for every process and tool."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from ctxstream.api.commands import add_api_commands
from ctxstream.cli.common import fail
from schemas.kafka.settings import KafkaSettings

Command = Callable[[argparse.Namespace], int]

#: Loggers ``tail`` quiets: its standard error carries its own failure line only.
TAIL_QUIET_LOGGERS: Final = {"aiokafka": logging.CRITICAL, "ctxstream": logging.WARNING}


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
    from ctxstream.cli.conformance import run_conformance

    return run_conformance(Path(args.directory), sys.stdout)


def _bench_core(args: argparse.Namespace) -> int:
    from ctxstream.bench.core import report_table, run_core_bench, write_report

    results = run_core_bench(args.sizes, repeats=args.repeats)
    write_report(results, Path(args.json))
    sys.stdout.write(report_table(results))
    return 0


def _summarizer(_: argparse.Namespace) -> int:
    from summarizer_worker.__main__ import run
    from summarizer_worker.settings import SummarizerSettings

    return run(SummarizerSettings())


def _worker(args: argparse.Namespace) -> int:
    from streams.projector_settings import ProjectorSettings
    from streams.worker import run_worker

    settings = ProjectorSettings()
    if args.engine is not None:
        settings = settings.model_copy(update={"engine": args.engine})
    return run_worker(settings, log_level=args.log_level)


def _positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    return _whole(text, least=1)


def _non_negative(text: str) -> int:
    """An argument that must be a whole number of at least 0."""
    return _whole(text, least=0)


def _whole(text: str, *, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} is below {least}")
    return value


def _demo(args: argparse.Namespace) -> int:
    from ctxstream.bench.demo import run_demo

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    asyncio.run(
        run_demo(KafkaSettings(), sessions=args.sessions, invocations=args.invocations, say=say)
    )
    return 0


def _bench_ingest(args: argparse.Namespace) -> int:
    from ctxstream.bench.ingest import IngestBenchConfig, report_text, run_ingest_bench

    config = IngestBenchConfig(events=args.events, sessions=args.sessions, profile=args.profile)
    result = asyncio.run(run_ingest_bench(config))
    result.write_json(Path(args.json))
    sys.stdout.write(report_text(result))
    return 0


def _bench_fold(args: argparse.Namespace) -> int:
    from ctxstream.bench.fold import FoldBenchConfig, report_text, run_fold_bench

    config = FoldBenchConfig(
        events=args.events,
        sessions=args.sessions,
        batch_size=args.batch_size,
        profile=args.profile,
    )
    result = run_fold_bench(config)
    if args.json:
        result.write_json(Path(args.json))
    sys.stdout.write(report_text(result))
    return 0


def _bench_append(args: argparse.Namespace) -> int:
    from ctxstream.bench.append import report_text, run_append_bench

    result = asyncio.run(run_append_bench(KafkaSettings(), args.events))
    result.write_json(Path(args.json))
    sys.stdout.write(report_text(result))
    return 0


def _bench_restore(args: argparse.Namespace) -> int:
    from ctxstream.bench.restore import report_json, report_text, run_restore_bench
    from streams.projector_settings import ProjectorSettings

    results = asyncio.run(run_restore_bench(ProjectorSettings(), args.sizes))
    Path(args.json).write_text(report_json(results), encoding="utf-8")
    sys.stdout.write(report_text(results))
    return 0


def _bench_reads(args: argparse.Namespace) -> int:
    from ctxstream.bench.reads import report_text, run_reads_bench
    from streams.projector_settings import ProjectorSettings

    report = asyncio.run(run_reads_bench(ProjectorSettings(), args.sizes, args.reads))
    Path(args.json).write_text(report.to_json(), encoding="utf-8")
    sys.stdout.write(report_text(report))
    return 0


def _bench_neighbours(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from ctxstream.bench.neighbours import (
        NeighboursBenchConfig,
        report_text,
        run_neighbours_bench,
    )
    from ctxstream.bench.neighbours_noisy import NoisyLoad

    # Each field of the load has an option of the same name (--parked-reads: parked_reads).
    load = NoisyLoad(**{field.name: getattr(args, field.name) for field in fields(NoisyLoad)})
    config = NeighboursBenchConfig(
        seconds=args.seconds,
        quiet_sessions=args.quiet_sessions,
        big_session_events=args.big_session_events,
        again=args.again,
        load=load,
    )
    report = asyncio.run(run_neighbours_bench(KafkaSettings(), config))
    Path(args.json).write_text(report.to_json(), encoding="utf-8")
    sys.stdout.write(report_text(report))
    if report.exited:
        return fail("bench neighbours", f"processes exited during the run: {report.exited}")
    return 0


def _bench_compaction(args: argparse.Namespace) -> int:
    from ctxstream.bench.compaction import (
        CompactionBenchConfig,
        report_json,
        report_text,
        run_compaction_bench,
    )

    config = CompactionBenchConfig(
        sessions=args.sessions,
        invocations=args.invocations,
        round_pause_s=args.round_pause_s,
        batch_within_s=args.batch_within_s,
        arrivals=args.arrivals,
        engine=args.engine,
        background_events_per_s=args.background_events_per_s,
    )
    report = asyncio.run(run_compaction_bench(KafkaSettings(), config))
    Path(args.json).write_text(report_json(report), encoding="utf-8")
    sys.stdout.write(report_text(report))
    return 0


def _tail(args: argparse.Namespace) -> int:
    """Print the snapshots as JSON lines until Ctrl-C; any failure is one line on stderr."""
    from aiokafka.errors import KafkaError

    from ctxstream.errors import InvalidArgumentError
    from schemas.errors import CtxstreamError

    # The command reports a broker it cannot use in one line of its own; aiokafka would
    # log each failed attempt around it, and the subscription its start (INFO).
    for name, level in TAIL_QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(max(level, logging.getLogger().level))
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
    from ctxstream.client import Client

    items = Client(settings=settings).subscribe(tenant, sessions=sessions, from_offset=from_offset)
    async with contextlib.aclosing(items):
        async for item in items:
            sys.stdout.buffer.write(item.to_json() + b"\n")
            sys.stdout.flush()


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

    summarizer = commands.add_parser(
        "summarizer", help="run the summarizer worker (settings from CTXSTREAM_* variables)"
    )
    summarizer.set_defaults(run=_summarizer)

    worker = commands.add_parser(
        "worker", help="run the projector (settings from CTXSTREAM_* variables)"
    )
    worker.add_argument(
        "--engine",
        choices=("native", "faust"),
        help="the projector engine (default: CTXSTREAM_ENGINE, else native)",
    )
    worker.set_defaults(run=_worker)

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

    add_api_commands(commands)  # serve, keys

    from ctxstream.cli.reads import add_read_commands  # it imports this module's _fail

    add_read_commands(commands)

    from ctxstream.cli.append import add_append_command
    from ctxstream.cli.sessions import add_sessions_command

    add_append_command(commands)
    add_sessions_command(commands)

    from ctxstream.cli.replay import add_replay_command

    add_replay_command(commands)

    from ctxstream.cli.up import add_up_command

    add_up_command(commands)

    demo = commands.add_parser(
        "demo",
        help="run the whole pipeline live on the broker (CTXSTREAM_KAFKA_BOOTSTRAP): "
        "sessions in, summaries and projections out",
    )
    demo.add_argument("--sessions", type=_positive, default=3, help="agent sessions (default 3)")
    demo.add_argument(
        "--invocations", type=_positive, default=7, help="invocations per session (default 7)"
    )
    demo.set_defaults(run=_demo)

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
    ingest = bench_commands.add_parser(
        "ingest", help="produce a workload, then time the projector and a plain consumer on it"
    )
    ingest.add_argument("--events", type=int, default=200_000, help="events (default 200000)")
    ingest.add_argument("--sessions", type=int, default=2_000, help="sessions (default 2000)")
    ingest.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    ingest.add_argument(
        "--profile", metavar="FILE", help="also write a cProfile of the projector run here"
    )
    ingest.set_defaults(run=_bench_ingest)
    fold = bench_commands.add_parser(
        "fold",
        help="time the projector's batch step and snapshots on the ingest workload, no broker",
    )
    fold.add_argument("--events", type=_positive, default=40_000, help="events (default 40000)")
    fold.add_argument("--sessions", type=_positive, default=400, help="sessions (default 400)")
    fold.add_argument(
        "--batch-size", type=_positive, default=5_000, help="records per batch (default 5000)"
    )
    fold.add_argument("--json", metavar="FILE", help="also write the figures here")
    fold.add_argument(
        "--profile", metavar="FILE", help="also write a cProfile of the timed calls here"
    )
    fold.set_defaults(run=_bench_fold)
    append = bench_commands.add_parser(
        "append",
        help="the client's validated acks=all append against a plain producer, in one run",
    )
    append.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    append.add_argument(
        "--events", type=_positive, default=20_000, help="events to append (default 20000)"
    )
    append.set_defaults(run=_bench_append)
    restore = bench_commands.add_parser(
        "restore",
        help="time a fresh native worker's restore of one session from the changelog, by size",
    )
    restore.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    restore.add_argument(
        "--sizes",
        type=_positive,
        nargs="+",
        default=[100, 1_000, 10_000, 50_000],
        help="session lengths in events (default 100 1000 10000 50000)",
    )
    restore.set_defaults(run=_bench_restore)
    reads = bench_commands.add_parser(
        "reads",
        help="time context reads through the client from an in-process worker, by session length",
    )
    reads.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    reads.add_argument(
        "--sizes",
        type=_positive,
        nargs="+",
        default=[100, 50_000],
        help="session lengths in events (default 100 50000)",
    )
    reads.add_argument(
        "--reads",
        type=_positive,
        default=1_000,
        help="timed reads per size and kind (default 1000)",
    )
    reads.set_defaults(run=_bench_reads)
    _add_bench_neighbours(bench_commands)
    compaction = bench_commands.add_parser(
        "compaction",
        help="time compaction end to end: trigger appended to summary applied (extractive)",
    )
    compaction.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    compaction.add_argument(
        "--sessions",
        type=int,
        default=30,
        help="sessions (default 30: about 240 events/s, within one projector's reach here)",
    )
    compaction.add_argument(
        "--invocations", type=int, default=12, help="invocations per session (default 12)"
    )
    compaction.add_argument(
        "--round-pause-s", type=float, default=0.5, help="pause between rounds (default 0.5)"
    )
    compaction.add_argument(
        "--batch-within-s", type=float, default=0.02, help="the projector's batch window"
    )
    compaction.add_argument(
        "--arrivals",
        choices=["spread", "burst"],
        default="spread",
        help="spread: a round's sessions append evenly spaced over the round, as independent "
        "agents would (default); burst: all at the same instant (a stress case)",
    )
    compaction.add_argument(
        "--engine", choices=["native", "faust"], default="native", help="the projector's engine"
    )
    compaction.add_argument(
        "--background-events-per-s",
        type=int,
        default=0,
        help="other sessions appended to the same topic at this rate meanwhile (default 0)",
    )
    compaction.set_defaults(run=_bench_compaction)
    return parser


def _add_bench_neighbours(
    bench_commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    neighbours = bench_commands.add_parser(
        "neighbours",
        help="a quiet tenant's append plus read-your-writes through the HTTP API, alone and "
        "while a noisy tenant runs every costly pattern at once, in one run",
    )
    neighbours.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    neighbours.add_argument(
        "--seconds", type=float, default=20.0, help="each phase's length (default 20)"
    )
    neighbours.add_argument(
        "--again",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the quiet tenant alone again after the noisy phase (default: yes)",
    )
    counts = {
        "quiet-sessions": (4, "quiet sessions, each a loop of round trips"),
        "big-session-events": (20_000, "events of the session as-of reads and forks use"),
        "parked-reads": (12, "context reads waiting for a far min_offset"),
        "as-of-reads": (4, "as-of reads of the big session at once"),
        "forks": (2, "forks of the big session at once"),
        "batches": (1, "loops of events:batch"),
        "batch-events": (1_000, "events per batch"),
        "huge-batch-events": (200_000, "events of the batch sent now and then"),
        "subscriptions": (8, "subscriptions opened and dropped at once"),
        "wrong-secrets": (32, "requests with a wrong secret of the noisy key at once"),
        "over-cap-appends": (2, "appends at once to a session past its size cap"),
    }
    for name, (default, what) in counts.items():
        positive = name in ("quiet-sessions", "big-session-events")
        neighbours.add_argument(
            f"--{name}",
            type=_positive if positive else _non_negative,
            default=default,
            help=f"{what} (default {default}{'' if positive else '; 0: none'})",
        )
    neighbours.add_argument(
        "--huge-batch-every-s",
        type=float,
        default=15.0,
        help="pause after each huge batch (default 15)",
    )
    neighbours.set_defaults(run=_bench_neighbours)


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
