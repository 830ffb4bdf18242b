"""``ctxstream worker``: run the projector until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import NoReturn

from faust.worker import Worker

from streams.projector import build_projector
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)


def run_worker(settings: ProjectorSettings, *, log_level: str = "INFO") -> NoReturn:
    """Run the projector in a faust Worker (signal handling, clean shutdown); its exit status."""
    settings.tune_gc()
    projector = build_projector(settings)
    logger.info(
        "projector starting app_id=%s events=%s.events store=%s batch=%d",
        settings.app_id,
        settings.topic_prefix,
        settings.table_store,
        settings.batch_size,
    )
    worker = Worker(projector.app, loglevel=log_level.lower(), quiet=True, redirect_stdouts=False)

    crashing: set[asyncio.Future[None]] = set()

    async def crash_and_stop(exc: BaseException) -> None:
        # Recorded as the worker's crash reason, `exc` is raised again once the
        # worker has stopped, so the process exits with a non-zero status; the
        # stop itself is the worker's own on SIGTERM (a crash alone leaves the
        # process waiting).
        await worker.crash(exc)
        os.kill(os.getpid(), signal.SIGTERM)

    def crash(exc: BaseException) -> None:
        crashing.add(asyncio.ensure_future(crash_and_stop(exc)))

    projector.folding.on_failure = crash
    worker.execute_from_commandline()  # exits the process when the worker stops
