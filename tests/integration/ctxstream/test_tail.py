"""``ctxstream tail`` as a child process: JSON lines of one tenant's snapshots, Ctrl-C, errors.

The lines are compared with the projector's own records of the sessions asked
for, read until the last of them in each partition (as in ``test_subscribe``);
each error is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

import orjson
import pytest

from schemas.projection_snapshot import ProjectionSnapshot
from tests.conftest import REPO, free_ports, unique_topic
from tests.support.subscriptions import RECEIVE_TIMEOUT_S, TENANT, Placed, Projections

pytestmark = pytest.mark.integration

EXIT_TIMEOUT_S = 30.0  # closing the reader after Ctrl-C
ERROR_TIMEOUT_S = 60.0  # an error exit, connection attempt included


def _environment(bootstrap: str, prefix: str) -> dict[str, str]:
    return {**os.environ, "CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap, "CTXSTREAM_TOPIC_PREFIX": prefix}


def _placed(line: bytes) -> Placed:
    item = orjson.loads(line)
    return item["partition"], item["offset"], ProjectionSnapshot.model_validate(item["snapshot"])


def _interruptible() -> None:
    """Ctrl-C as at a terminal: SIGINT at its default, whatever the test run inherited.

    A suite started in the background of a shell without job control inherits SIGINT
    ignored, and Python then keeps it ignored in the child: ``tail`` would never see it.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def _tail_until_interrupted(
    env: Mapping[str, str], arguments: Sequence[str], expected: list[Placed]
) -> tuple[list[Placed], int, str]:
    """Run ``ctxstream tail``, read lines to the last expected one in each partition, Ctrl-C.

    The lines as (partition, offset, snapshot), the exit status and stderr.
    """
    last = {partition: offset for partition, offset, _ in expected}  # expected is in order
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ctxstream",
        "tail",
        *arguments,
        env=dict(env),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=_interruptible,
    )
    assert process.stdout is not None
    lines: list[Placed] = []
    try:
        async with asyncio.timeout(RECEIVE_TIMEOUT_S):
            while not all((p, o) in {line[:2] for line in lines} for p, o in last.items()):
                line = await process.stdout.readline()
                assert line, "tail ended before the last expected snapshot"
                lines.append(_placed(line))
    finally:
        process.send_signal(signal.SIGINT)
        rest, stderr = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT_S)
    lines.extend(_placed(line) for line in rest.splitlines())
    assert process.returncode is not None
    return lines, process.returncode, stderr.decode()


async def test_tail_prints_the_tenants_snapshots_as_json_lines_until_ctrl_c(
    projections: Projections,
) -> None:
    expected = projections.written(projections.acme)
    env = _environment(projections.settings.kafka_bootstrap, projections.settings.topic_prefix)

    lines, status, stderr = await _tail_until_interrupted(
        env, ["--tenant", TENANT, "--from-offset", "0"], expected
    )

    assert sorted(lines, key=lambda p: p[:2]) == expected
    assert status == 0
    assert "Traceback" not in stderr
    assert " INFO " not in stderr, stderr  # the fixture's bad records are warned about, no more


async def test_tail_with_sessions_prints_those_sessions_only(projections: Projections) -> None:
    first, second = projections.last
    expected = projections.written(projections.last)
    env = _environment(projections.settings.kafka_bootstrap, projections.settings.topic_prefix)

    # No --tenant: the sessions' tenant.
    lines, status, _ = await _tail_until_interrupted(
        env, ["--session", first, "--session", second, "--from-offset", "0"], expected
    )

    assert sorted(lines, key=lambda p: p[:2]) == expected
    assert status == 0


@pytest.mark.parametrize(
    ("arguments", "bootstrap", "status", "said"),
    [
        (["--tenant", "acme/eu"], "broker", 2, "tenant: 'acme/eu' contains '/'"),
        (["--tenant", " acme"], "broker", 2, "tenant: the tenant part ' acme' starts or ends"),
        (["--tenant", "acme", "--session", "other/a/u/s"], "broker", 2, "sessions[0]: tenant"),
        (["--tenant", "acme", "--from-offset", "-1"], "broker", 2, "from_offset: -1 is negative"),
        ([], "broker", 2, "give --tenant, or --session"),
        (["--tenant", "acme"], "unreachable", 1, "unavailable"),
        (["--tenant", "acme"], "broker", 1, ".projections' does not exist"),
    ],
    ids=["slash", "space", "other-tenant", "negative", "no-tenant", "unreachable", "no-topic"],
)
def test_an_error_is_one_line_and_a_failing_exit(
    kafka_bootstrap: str, arguments: list[str], bootstrap: str, status: int, said: str
) -> None:
    address = kafka_bootstrap if bootstrap == "broker" else f"127.0.0.1:{free_ports(1)[0]}"
    result = subprocess.run(
        [sys.executable, "-m", "ctxstream", "tail", *arguments],
        env=_environment(address, unique_topic("absent")),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=ERROR_TIMEOUT_S,
        check=False,
    )

    assert result.returncode == status
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("ctxstream tail: ")
    assert said in result.stderr
