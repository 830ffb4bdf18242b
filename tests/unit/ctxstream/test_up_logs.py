"""``ctxstream up`` caps each service's log: a real child's flood of lines keeps the newest
output in ``<service>.log`` and ``<service>.log.1``, never more than about twice the cap."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from ctxstream.cli.up_services import copy_capped

CAP = 64 * 1024
LINES = 20_000  # about 1.2 MB of output: many times the cap


async def test_a_flood_of_output_is_kept_within_twice_the_cap_with_its_newest_lines(
    tmp_path: Path,
) -> None:
    log = tmp_path / "projector.log"
    log.write_bytes(b"from an earlier run\n")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        f"for n in range({LINES}): print(f'WARNING dead letter number {{n:08d}} ' + 'x' * 30)",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert child.stdout is not None
    await copy_capped(child.stdout, log, CAP)
    assert await child.wait() == 0

    older = tmp_path / "projector.log.1"
    assert log.stat().st_size <= CAP
    assert older.stat().st_size <= CAP
    assert sorted(os.listdir(tmp_path)) == ["projector.log", "projector.log.1"]
    kept = older.read_bytes() + log.read_bytes()
    # The newest output is all there, in order, up to the child's last line.
    assert kept.endswith(f"number {LINES - 1:08d} {'x' * 30}\n".encode())
    assert b"from an earlier run" not in kept


async def test_output_within_the_cap_is_appended_to_the_log_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_bytes(b"before\n")
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "print('after')", stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    await copy_capped(child.stdout, log, CAP)
    await child.wait()
    assert log.read_bytes() == b"before\nafter\n"
    assert not (tmp_path / "serve.log.1").exists()
