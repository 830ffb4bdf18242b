"""The pipeline's own processes and topics: ``topics create``, ``worker``, ``summarizer``.

Each reads its settings from the ``CTXSTREAM_*`` variables: ``worker`` runs the
projector (:func:`streams.worker.run_worker`, ``--engine`` over
``CTXSTREAM_ENGINE``), ``summarizer`` the summarizer worker
(:func:`summarizer_worker.__main__.run`), and ``topics create`` makes the
deployment's topics idempotently (:func:`streams.topics.create_topics`),
printing ``created NAME`` or ``exists  NAME`` per topic.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ctxstream.cli.common import Subcommands
from schemas.kafka.settings import KafkaSettings
from streams.projector_settings import ProjectorSettings
from streams.topics import create_topics
from streams.worker import run_worker
from summarizer_worker.__main__ import run
from summarizer_worker.settings import SummarizerSettings


def add_topics_command(commands: Subcommands) -> None:
    """Add ``topics create`` to the ``ctxstream`` subcommands."""
    topics = commands.add_parser("topics", help="manage the deployment's topics")
    topics_commands = topics.add_subparsers(dest="topics_command", required=True)
    create = topics_commands.add_parser(
        "create", help="create the topics idempotently (settings from CTXSTREAM_* variables)"
    )
    create.set_defaults(run=_topics_create)


def add_summarizer_command(commands: Subcommands) -> None:
    """Add ``summarizer`` to the ``ctxstream`` subcommands."""
    summarizer = commands.add_parser(
        "summarizer", help="run the summarizer worker (settings from CTXSTREAM_* variables)"
    )
    summarizer.set_defaults(run=_summarizer)


def add_worker_command(commands: Subcommands) -> None:
    """Add ``worker`` to the ``ctxstream`` subcommands."""
    worker = commands.add_parser(
        "worker", help="run the projector (settings from CTXSTREAM_* variables)"
    )
    worker.add_argument(
        "--engine",
        choices=("native", "faust"),
        help="the projector engine (default: CTXSTREAM_ENGINE, else native)",
    )
    worker.set_defaults(run=_worker)


def _topics_create(_: argparse.Namespace) -> int:
    settings = KafkaSettings()
    result = asyncio.run(create_topics(settings))
    for name in result.created:
        sys.stdout.write(f"created {name}\n")
    for name in result.existing:
        sys.stdout.write(f"exists  {name}\n")
    return 0


def _summarizer(_: argparse.Namespace) -> int:
    return run(SummarizerSettings())


def _worker(args: argparse.Namespace) -> int:
    settings = ProjectorSettings()
    if args.engine is not None:
        settings = settings.model_copy(update={"engine": args.engine})
    return run_worker(settings, log_level=args.log_level)
