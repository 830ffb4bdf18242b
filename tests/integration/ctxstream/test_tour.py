"""The README's tour, pasted as printed, against a fresh ``ctxstream up``.

A new user copies the tour's blocks into a terminal (shell) or an interpreter
(Python), in order, with no edits. This test does the same: it runs every
block of the section verbatim, the first one (``ctxstream up``) in the
background in an empty folder on ports nothing else uses, the shell blocks
through bash in one "terminal" (a variable a block sets is there for the
next), each Python block through a fresh interpreter, and a block the tour
says runs until Ctrl-C until what it prints shows it works, then SIGINT. The
environment gives only what a user who moved the ports would have exported:
``CTXSTREAM_KAFKA_PORT``, ``CTXSTREAM_KAFKA_CONTROLLER_PORT``,
``CTXSTREAM_POSTGRES_PORT`` and ``CTXSTREAM_HTTP_PORT`` (never the broker's
address nor a DSN), and a configuration
folder of its own (``XDG_CONFIG_HOME``). What each block prints is checked
against what that step of the tour promises; a README change that breaks a
block, or adds one this test does not know, fails here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

import pytest

from tests.conftest import REPO, free_ports
from tests.integration.ctxstream.test_up import own_env, processes_naming
from tests.support.readme_tour import TourBlock, tour_blocks

pytestmark = pytest.mark.integration

UP_TIMEOUT_S: Final = 300.0  # a cold broker, the projector's claims, the server's imports
BLOCK_TIMEOUT_S: Final = 180.0  # a step that waits for a summary from a cold summarizer
STOP_TIMEOUT_S: Final = 120.0


@dataclass(frozen=True)
class Promise:
    """What a step's output must show: every pattern matches its standard output."""

    step: str
    patterns: tuple[str, ...]

    def missing(self, out: str) -> list[str]:
        """The patterns `out` does not match."""
        return [pattern for pattern in self.patterns if not re.search(pattern, out, re.MULTILINE)]


#: One promise per block of the tour, in order: a block this list does not know fails the test.
PROMISES: Final = (
    Promise("1. up", (r"^ctxstream is up", r"^stop everything with Ctrl-C")),
    Promise("2. append and read", (r"^user \['Where is my order\?'\]$",)),
    Promise(
        "3. over HTTP",
        (
            r'"status":\s*"ok"',
            # The duplicate is answered with the first copy's offset.
            r'^\{"offset":\s*(\d+),\s*"duplicate":\s*false\}$[\s\S]*'
            r'^\{"offset":\s*\1,\s*"duplicate":\s*true\}$',
            r"It was order 42\.",
            r"Where is my order\?",
            r'"error":\s*"invalid-argument".*invocationID',
        ),
    ),
    Promise("3. server-sent events", (r"^event: snapshot$", r"acme/support/u1/s1")),
    Promise("4. subscribe", (r"^\d+ \d+ acme/support/u1/s1 \d+$",)),
    Promise("5. compaction", (r"^summary \S+ at offset \d+ - \d+ items$",)),
    Promise(
        "5. from the command line",
        (r"^acme/support/u1/s1: last offset \d+, \d+ invocations, 1 compaction$", r"Answer 10\."),
    ),
    Promise(
        "6. time travel and expand",
        (r"^\d+ contents before the summary, \d+ after$", r"^the summary stands in for \[.*'e1'"),
    ),
    Promise("7. replay", (r"^1 \d+ \d+(\.\d+)?",)),
    # The fork inherits the source up to its summary: the summary, then what followed it.
    Promise("8. fork", (r"^model \['.*- Where is my order\?", r"^user \['Question 11\?'\]$")),
)


@dataclass
class Running:
    """A block's process and what it printed so far."""

    process: subprocess.Popen[str]
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._threads = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream: IO[str] | None, lines: list[str]) -> None:
        assert stream is not None
        with stream:
            lines.extend(line.rstrip("\n") for line in stream)

    @property
    def text(self) -> str:
        """Standard output so far."""
        return "\n".join(self.out)

    def until(self, promise: Promise, timeout_s: float) -> None:
        """Wait until the output keeps `promise`; fail if the process ends or time runs out."""
        deadline = time.monotonic() + timeout_s
        while promise.missing(self.text):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.finish(0)
                raise AssertionError(self.describe(promise))
            time.sleep(0.2)

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the block's process group, as a terminal sends it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)

    def finish(self, timeout_s: float) -> int:
        """The exit status, once the process and its output ended (killed after `timeout_s`)."""
        try:
            status = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            status = self.process.wait()
        for thread in self._threads:
            thread.join(10)
        return status

    def describe(self, promise: Promise) -> str:
        """Why `promise` was not kept: the patterns missing and what the block printed."""
        return (
            f"step {promise.step}: missing {promise.missing(self.text)}; "
            f"status {self.process.returncode}\nout:\n{self.text}\nerr:\n" + "\n".join(self.err)
        )


@dataclass
class Terminal:
    """Where a reader pastes the blocks: one shell session's variables, one folder, one env."""

    folder: Path
    env: dict[str, str]
    variables: Path

    def start(self, block: TourBlock) -> Running:
        """Run `block` as pasted: bash with the variables earlier blocks set, or Python."""
        if block.language == "python":
            command = [sys.executable, "-c", block.code]
        else:
            keep = block.assigned_variables()
            script = (
                "set -eo pipefail\n"
                f"if [ -f '{self.variables}' ]; then source '{self.variables}'; fi\n"
                f"{block.code}\n"
                + (f"declare -p {' '.join(keep)} >> '{self.variables}'\n" if keep else "")
            )
            command = ["bash", "-c", script]
        process = subprocess.Popen(
            command,
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        return Running(process)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    """An empty folder and a new user's environment with every port moved to a free one."""
    kafka_port, controller_port, http_port, postgres_port = free_ports(4)
    env = own_env() | {
        "CTXSTREAM_KAFKA_PORT": str(kafka_port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_POSTGRES_PORT": str(postgres_port),
        "CTXSTREAM_HTTP_PORT": str(http_port),
        "CTXSTREAM_KAFKA_FAST": "1",
        "CTXSTREAM_PYTHON": sys.executable,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        # The clone is the package a user installed with deploy/setup.
        "PYTHONPATH": str(REPO),
    }
    folder = tmp_path / "work"
    folder.mkdir()
    yield Terminal(folder, env, tmp_path / "variables.sh")
    for line in processes_naming(folder):
        os.kill(int(line.split(":")[0]), signal.SIGKILL)


def test_the_tour_names_no_broker_address_and_promises_something_of_every_block() -> None:
    blocks = tour_blocks((REPO / "README.md").read_text())

    assert len(blocks) == len(PROMISES), [block.code.splitlines()[0] for block in blocks]
    assert blocks[0].language == "sh"
    assert blocks[0].code.startswith("ctxstream up ")
    assert blocks[0].follows
    for block in blocks:
        assert "9092" not in block.code, block.code
        assert "bootstrap=" not in block.code, block.code
        assert "CTXSTREAM_KAFKA_BOOTSTRAP" not in block.code, block.code


def test_every_block_of_the_tour_runs_as_printed_against_a_fresh_up(terminal: Terminal) -> None:
    blocks = tour_blocks((REPO / "README.md").read_text())
    assert len(blocks) == len(PROMISES)

    up = terminal.start(blocks[0])
    try:
        up.until(PROMISES[0], UP_TIMEOUT_S)
        for block, promise in zip(blocks[1:], PROMISES[1:], strict=True):
            running = terminal.start(block)
            if block.follows:
                running.until(promise, BLOCK_TIMEOUT_S)
                running.interrupt()
                running.finish(STOP_TIMEOUT_S)
                continue
            status = running.finish(BLOCK_TIMEOUT_S)
            assert status == 0, running.describe(promise)
            assert not promise.missing(running.text), running.describe(promise)
            assert not [line for line in running.err if "Traceback" in line], running.err
    finally:
        up.interrupt()
        stopped = up.finish(STOP_TIMEOUT_S)

    assert stopped == 0, up.err
    assert not [line for line in up.out + up.err if "Traceback" in line]
    assert processes_naming(terminal.folder) == []
