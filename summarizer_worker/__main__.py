"""``python -m summarizer_worker`` (and ``ctxstream summarizer``): run the worker.

Settings are read once, here, from ``CTXSTREAM_*`` variables; the backend is
chosen from them. SIGTERM and SIGINT stop the worker cleanly: running
transactions end, uncommitted requests are left for the next owner, and the
exit status is 0. A worker whose infrastructure failed (a lane's transaction,
a reader, the consumer) logs the error and exits with status 1, so that its
supervisor restarts it; it never stays alive while processing nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from typing import Final

from schemas.heap.heap_policy import HeapPolicy, log_gc
from summarizer_worker.backends import open_summarizer
from summarizer_worker.endpoint import shown_endpoint
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


#: The exit status of a worker that stopped on a failure of its own.
FAILED: Final = 1


def run(settings: SummarizerSettings) -> int:
    """Run the worker with `settings`; the exit status: 0 after a signal, 1 after a failure."""
    logger.info(
        "summarizer settings group=%s instance=%s backend=%s concurrency=%d bootstrap=%s "
        "endpoint=%s",
        settings.summarizer_group_id,
        settings.summarizer_instance_id,
        settings.summarizer,
        settings.summarizer_concurrency,
        settings.kafka_bootstrap,
        shown_endpoint(settings.openai_base_url) if settings.summarizer == "openai" else "-",
    )
    # Python's collector, measured: the worker's state is small (a slice per request, read and
    # dropped), so it steers nothing (README, "The cyclic garbage collector").
    heap = HeapPolicy("automatic", None, 600.0)
    heap.start()
    try:
        asyncio.run(serve(settings))
    except Exception:
        logger.exception("summarizer failed; exiting with status %d", FAILED)
        return FAILED
    finally:
        log_gc(heap)
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
