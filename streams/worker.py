"""``ctxstream worker``: run the projector until SIGTERM or SIGINT, on the engine its settings name.

Either engine exits with status 0 after a signal and non-zero after a failure
of its own (a failed transaction, a fenced producer, a dead folding task), so
that its supervisor restarts it; the records it had not committed are read
again. The faust engine's process: :mod:`streams.faust_engine.worker`.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import signal
import sys
from typing import NoReturn

from schemas.heap.heap_policy import HeapPolicy, log_gc
from streams.faust_engine.worker import run_faust_worker
from streams.liveness import FAILED
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)


def run_worker(settings: ProjectorSettings, *, log_level: str = "INFO") -> NoReturn:
    """Run the projector on the engine `settings` name; exits with its status."""
    heap = settings.heap_policy()
    heap.start()
    atexit.register(log_gc, heap)  # both engines end the process through sys.exit
    if settings.engine == "native":
        sys.exit(run_native_worker(settings, heap))
    run_faust_worker(settings, heap, log_level=log_level)


async def _serve_native(settings: ProjectorSettings, heap: HeapPolicy | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await NativeProjector(settings, heap=heap).run(stop)


def run_native_worker(settings: ProjectorSettings, heap: HeapPolicy | None = None) -> int:
    """Run the native engine until SIGTERM or SIGINT; 0 then, :data:`FAILED` on a failure.

    `heap` is the process's started collector policy, if any.
    """
    logger.info(
        "projector starting engine=native app_id=%s events=%s.events store=%s batch=%d",
        settings.app_id,
        settings.topic_prefix,
        settings.table_store,
        settings.batch_size,
    )
    try:
        asyncio.run(_serve_native(settings, heap))
    except Exception:
        logger.exception("projector failed; exiting with status %d", FAILED)
        return FAILED
    return 0
