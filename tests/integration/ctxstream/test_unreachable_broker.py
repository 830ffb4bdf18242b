"""A broker address nothing listens on is reported as an unreachable broker, at once.

Not as a missing projector after the read's whole timeout: reads, appends and
the ``context`` command are pointed at a port of 127.0.0.1 nothing listens on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from ctxstream import BrokerUnavailableError, Client
from tests.conftest import free_ports
from tests.support.events import text_event

pytestmark = pytest.mark.integration

#: The reads' own timeout: an unreachable broker is told well within it.
READ_TIMEOUT_S = 30.0
KEY = "acme/support/u1/s1"


def _unreachable() -> str:
    return f"127.0.0.1:{free_ports(1)[0]}"


async def _read(client: Client) -> object:
    return await client.context(KEY, timeout_s=READ_TIMEOUT_S)


async def _expand(client: Client) -> object:
    return await client.expand(KEY, "summary-1", timeout_s=READ_TIMEOUT_S)


async def _append(client: Client) -> object:
    async with client:
        return await client.append(KEY, text_event("e1", "inv1", 1.0, "question"))


@pytest.mark.parametrize("call", [_read, _expand, _append])
async def test_a_call_to_an_unreachable_broker_raises_broker_unavailable_at_once(
    call: Callable[[Client], Coroutine[Any, Any, object]],
) -> None:
    bootstrap = _unreachable()
    client = Client(bootstrap=bootstrap)
    started = time.monotonic()
    try:
        with pytest.raises(BrokerUnavailableError, match="could not be reached") as failed:
            await call(client)
    finally:
        await client.stop()
    assert time.monotonic() - started < READ_TIMEOUT_S / 2  # told, not waited out
    assert failed.value.bootstrap == bootstrap
    assert bootstrap in str(failed.value)


def test_the_context_command_says_the_broker_could_not_be_reached() -> None:
    bootstrap = _unreachable()
    result = subprocess.run(
        [sys.executable, "-m", "ctxstream", "context", KEY, "--timeout-s", str(READ_TIMEOUT_S)],
        env={**os.environ, "CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap},
        capture_output=True,
        text=True,
        timeout=READ_TIMEOUT_S * 2,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"ctxstream context: broker {bootstrap} unavailable: ")
    assert "could not be reached" in result.stderr
    assert "no projector" not in result.stderr
