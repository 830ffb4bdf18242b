"""The pipeline's two workers as child processes: their settings, start and stop.

The benchmark and the demo run the projector (``python -m ctxstream worker``)
and the summarizer (``python -m summarizer_worker``) as the deployment does:
separate processes configured by ``CTXSTREAM_*`` variables, each logging to
a file of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

from schemas.kafka.settings import KafkaSettings

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S: Final = 30.0
#: How long a summarizer may take to start and be assigned its partitions.
SUMMARIZER_START_TIMEOUT_S: Final = 120.0
PROJECTOR: Final = ["ctxstream", "worker"]
SUMMARIZER: Final = ["summarizer_worker"]


def kafka_env(settings: KafkaSettings) -> dict[str, str]:
    """The variables that point a worker at `settings`' cluster and topics."""
    return {
        "CTXSTREAM_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "CTXSTREAM_TOPIC_PREFIX": settings.topic_prefix,
        "CTXSTREAM_EVENTS_PARTITIONS": str(settings.events_partitions),
        "CTXSTREAM_PARTITIONS": str(settings.partitions),
    }


def projector_env(
    settings: KafkaSettings,
    *,
    data_dir: Path,
    compaction: Mapping[str, Any],
    batch_within_s: float,
    engine: str = "native",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A projector of `settings`' deployment on `engine`, its group named after the topic prefix.

    `extra` adds variables (the workload's apps, say).
    """
    return {
        **(extra or {}),
        **kafka_env(settings),
        "CTXSTREAM_ENGINE": engine,
        "CTXSTREAM_APP_ID": f"{settings.topic_prefix}-projector",
        "CTXSTREAM_DATA_DIR": str(data_dir),
        "CTXSTREAM_METRICS_PORT": "0",
        "CTXSTREAM_BATCH_WITHIN_S": str(batch_within_s),
        "CTXSTREAM_COMPACTION": json.dumps(dict(compaction)),
    }


def summarizer_env(settings: KafkaSettings) -> dict[str, str]:
    """A summarizer of `settings`' deployment with the deterministic extractive backend."""
    return {
        **kafka_env(settings),
        "CTXSTREAM_SUMMARIZER_GROUP_ID": f"{settings.topic_prefix}-summarizer",
        "CTXSTREAM_SUMMARIZER": "extractive",
    }


async def start_worker(
    name: str, module: list[str], env: Mapping[str, str], run_dir: Path
) -> asyncio.subprocess.Process:
    """``python -m <module...>`` with `env`, logging to ``<run_dir>/<name>.log``."""
    # Only this run's settings: CTXSTREAM_* variables of the caller do not leak in.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTREAM_")}
    with (run_dir / f"{name}.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", *module, env={**inherited, **env}, stdout=log, stderr=log
        )
    logger.info("started worker=%s pid=%d", name, process.pid)
    return process


def logged_gc(run_dir: Path, name: str) -> dict[str, str]:
    """What the collections cost worker `name`, from its log's last ``gc mode=...`` line.

    The fields of :func:`schemas.heap.heap_policy.log_gc`'s line (``mode``,
    ``seconds``, ``cpu_share``, ``collections`` as ``g0/g1/g2``, ...); empty
    when the worker logged none (it did not stop cleanly).
    """
    lines = [
        line
        for line in (run_dir / f"{name}.log").read_text(encoding="utf-8").splitlines()
        if " gc mode=" in line
    ]
    if not lines:
        return {}
    return dict(re.findall(r"(\w+)=(\S+)", lines[-1].split(" gc ", 1)[1]))


async def stop_worker(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT_S`."""
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            process.kill()
            await process.wait()


@contextlib.asynccontextmanager
async def running_summarizer(
    settings: KafkaSettings, run_dir: Path, name: str = "summarizer"
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A summarizer of `settings`' deployment, assigned its partitions, until the block ends.

    It logs to ``<run_dir>/<name>.log``; the block starts once that log says
    its partitions are assigned.

    Raises:
        RuntimeError: It exited, or was not assigned within
            :data:`SUMMARIZER_START_TIMEOUT_S`.
    """
    log = run_dir / f"{name}.log"
    process = await start_worker(name, SUMMARIZER, summarizer_env(settings), run_dir)
    try:
        deadline = time.monotonic() + SUMMARIZER_START_TIMEOUT_S
        while "partitions assigned" not in log.read_text(encoding="utf-8", errors="replace"):
            if process.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the summarizer did not start: see {log}")
            await asyncio.sleep(0.1)
        yield process
    finally:
        await stop_worker(process)
