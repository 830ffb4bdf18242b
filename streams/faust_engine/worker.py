"""The faust engine's worker process: a faust Worker whose folding task's death ends it.

faust's Worker handles signals and the clean shutdown. A crash of the
folding task (:class:`~streams.faust_engine.projector.FoldingTask`) is
recorded as the worker's crash and followed by the worker's own stop, so the
process exits non-zero and its supervisor restarts it; a stop that hangs is
cut short after :data:`CRASH_STOP_GRACE_S` with :data:`streams.liveness.FAILED`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from typing import Final, NoReturn

from faust.worker import Worker

from schemas.heap.heap_policy import HeapPolicy
from streams.faust_engine.projector import build_projector
from streams.liveness import FAILED
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)

#: How long a faust worker whose folding died may take to stop before the process
#: exits regardless (faust's stop can hang under load; nothing uncommitted is lost).
CRASH_STOP_GRACE_S: Final = 20.0


def _exit_failed() -> None:
    """End the process now, with the failure status, when a crashed worker did not stop."""
    logger.critical(
        "the worker did not stop within %.0f s of its crash; exiting", CRASH_STOP_GRACE_S
    )
    logging.shutdown()
    os._exit(FAILED)


def run_faust_worker(
    settings: ProjectorSettings, heap: HeapPolicy | None = None, *, log_level: str = "INFO"
) -> NoReturn:
    """Run the projector in a faust Worker (signal handling, clean shutdown); its exit status.

    `heap` is the process's started collector policy, if any.
    """
    projector = build_projector(settings, heap)
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
