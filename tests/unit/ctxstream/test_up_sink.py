"""``ctxstream up`` waits for its sink: ready on this run's "schema checked" line only.

Real child processes stand in for the sink; what they write to the log is the line
``streams.sink.worker`` logs once its schema is checked, spelled out here.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ctxstream.cli.up_services import Child, ServiceStartError
from ctxstream.cli.up_sink import log_size, sink_started, started

EARLIER = (
    "2026-01-01 INFO streams.sink.worker sink starting schema=ctxstream topic=ctxstream.events\n"
)


async def child_writing(log: Path, text: str, then_exit: int | None) -> Child:
    """A process that appends `text` to `log` after a moment, then exits or sleeps."""
    end = f"sys.exit({then_exit})" if then_exit is not None else "time.sleep(60)"
    code = f"import sys, time\ntime.sleep(0.5)\nopen({str(log)!r}, 'a').write({text!r})\n{end}\n"
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    return Child("sink", process, log)


def test_the_line_counts_for_its_own_schema_only() -> None:
    line = "INFO streams.sink.worker sink starting schema=ctxstream topic=t group=g database=d"
    assert started(line, "ctxstream")
    assert not started(line, "ctxs")
    assert not started(line.replace("=ctxstream ", "=ctxstream2 "), "ctxstream")
    assert started("sink starting schema=other", "other")


async def test_an_earlier_runs_line_does_not_make_an_exiting_sink_ready(tmp_path: Path) -> None:
    log = tmp_path / "sink.log"
    log.write_text(EARLIER)
    sink = await child_writing(log, "sink refused: schema at version 9\n", then_exit=3)
    with pytest.raises(ServiceStartError, match=r"^sink did not start: exited with status 3: "):
        await sink_started(sink, "ctxstream", since=log_size(log))
    assert log_size(log) == len(EARLIER) + len("sink refused: schema at version 9\n")


async def test_this_runs_line_makes_a_live_sink_ready(tmp_path: Path) -> None:
    log = tmp_path / "sink.log"
    log.write_text(EARLIER)
    since = log_size(log)
    sink = await child_writing(log, EARLIER.replace("2026-01-01", "2026-01-02"), then_exit=None)
    try:
        await sink_started(sink, "ctxstream", since=since)
        assert sink.process.returncode is None
    finally:
        sink.process.kill()
        await sink.process.wait()
    assert log_size(tmp_path / "missing.log") == 0
