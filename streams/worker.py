"""``ctxstream worker``: run the projector until SIGTERM or SIGINT, on the engine its settings name.

Either engine exits with status 0 after a signal and non-zero after a failure
of its own (a failed transaction, a fenced producer, a dead folding task), so
that its supervisor restarts it; the records it had not committed are read
again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from typing import Final, NoReturn

from faust.worker import Worker

from streams.faust_engine.projector import build_projector
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)


#: The exit status of a native worker that stopped on a failure of its own.
FAILED: Final = 1
#: How long a faust worker whose folding died may take to stop before the process
#: exits regardless (faust's stop can hang under load; nothing uncommitted is lost).
CRASH_STOP_GRACE_S: Final = 20.0


def run_worker(settings: ProjectorSettings, *, log_level: str = "INFO") -> NoReturn:
    """Run the projector on the engine `settings` name; exits with its status."""
    settings.tune_gc()
    if settings.engine == "native":
        sys.exit(run_native_worker(settings))
    run_faust_worker(settings, log_level=log_level)


async def _serve_native(settings: ProjectorSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await NativeProjector(settings).run(stop)


def run_native_worker(settings: ProjectorSettings) -> int:
    """Run the native engine until SIGTERM or SIGINT; 0 then, :data:`FAILED` on a failure."""
    logger.info(
        "projector starting engine=native app_id=%s events=%s.events store=%s batch=%d",
        settings.app_id,
        settings.topic_prefix,
        settings.table_store,
        settings.batch_size,
    )
    try:
        asyncio.run(_serve_native(settings))
    except Exception:
        logger.exception("projector failed; exiting with status %d", FAILED)
        return FAILED
    return 0


def _exit_failed() -> None:
    """End the process now, with the failure status, when a crashed worker did not stop."""
    logger.critical(
        "the worker did not stop within %.0f s of its crash; exiting", CRASH_STOP_GRACE_S
    )
    logging.shutdown()
    os._exit(FAILED)


def run_faust_worker(settings: ProjectorSettings, *, log_level: str = "INFO") -> NoReturn:
    """Run the projector in a faust Worker (signal handling, clean shutdown); its exit status."""
    projector = build_projector(settings)
    logger.info(
        "projector starting engine=faust app_id=%s events=%s.events store=%s batch=%d",
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
        hard_exit = threading.Timer(CRASH_STOP_GRACE_S, _exit_failed)
        hard_exit.daemon = True
        hard_exit.start()  # before the stop, which can hang
        await worker.crash(exc)
        os.kill(os.getpid(), signal.SIGTERM)

    def crash(exc: BaseException) -> None:
        crashing.add(asyncio.ensure_future(crash_and_stop(exc)))

    projector.folding.on_failure = crash
    worker.execute_from_commandline()  # exits the process when the worker stops
