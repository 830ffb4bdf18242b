"""``python -m summarizer_worker`` (and ``ctxstream summarizer``): run the worker.

Settings are read once, here, from ``CTXSTREAM_*`` variables; the backend is
chosen from them. SIGTERM and SIGINT stop the worker cleanly: running
transactions end, uncommitted requests are left for the next owner.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys

from summarizer_worker.backends import open_summarizer
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.worker import SummarizerWorker

logger = logging.getLogger(__name__)


def producer_id(settings: SummarizerSettings) -> str:
    """Who appends this process's summaries: ``<group>/<instance id or host-pid>``."""
    instance = settings.summarizer_instance_id or f"{socket.gethostname()}-{os.getpid()}"
    return f"{settings.summarizer_group_id}/{instance}"[:256]


async def serve(settings: SummarizerSettings) -> None:
    """Run the worker until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with open_summarizer(settings) as summarizer:
        worker = SummarizerWorker(settings, summarizer, producer_id=producer_id(settings))
        await worker.run(stop)


def run(settings: SummarizerSettings) -> int:
    """Run the worker with `settings`; the exit status."""
    logger.info(
        "summarizer settings group=%s instance=%s backend=%s concurrency=%d bootstrap=%s",
        settings.summarizer_group_id,
        settings.summarizer_instance_id,
        settings.summarizer,
        settings.summarizer_concurrency,
        settings.kafka_bootstrap,
    )
    asyncio.run(serve(settings))
    return 0


def main() -> int:
    """Read the settings once, configure logging and run the worker."""
    settings = SummarizerSettings()
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
