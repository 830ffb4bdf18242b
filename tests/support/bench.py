"""Run a ``ctxstream bench`` command against the test broker and read its JSON figures."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

BENCH_TIMEOUT_S = 300.0  # worker starts and group joins, the workload, the settle wait


async def run_bench(kafka_bootstrap: str, run_dir: Path, *args: str) -> tuple[dict[str, Any], str]:
    """Run ``python -m ctxstream bench <args> --json FILE`` in `run_dir`; its figures and stdout.

    Fails when the command exits non-zero, with the tail of its stderr.
    """
    report = run_dir / "figures.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ctxstream",
        "bench",
        *args,
        "--json",
        str(report),
        env={**os.environ, "CTXSTREAM_KAFKA_BOOTSTRAP": kafka_bootstrap},
        cwd=run_dir,  # the workers' logs and data go to .run/ under it
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), BENCH_TIMEOUT_S)
    assert process.returncode == 0, stderr.decode()[-3000:]
    return json.loads(report.read_text(encoding="utf-8")), stdout.decode()
