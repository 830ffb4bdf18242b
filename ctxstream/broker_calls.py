"""Broker calls bounded in time, whose failure is one clear :class:`BrokerUnavailableError`.

A bootstrap that no broker accepted (aiokafka's ``KafkaConnectionError`` at a
client's start, which comes at once when nothing listens there) is said as
such by :func:`unreachable`, rather than waited out as a missing answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiokafka.errors import KafkaError

from ctxstream.errors import BrokerUnavailableError


@contextlib.asynccontextmanager
async def broker_calls(bootstrap: str, timeout_s: float) -> AsyncIterator[None]:
    """Run the block's calls to the broker at `bootstrap` within `timeout_s`.

    Raises:
        BrokerUnavailableError: The block ran out of time, or aiokafka raised
            (the reason names its error); other exceptions pass as they are.
    """
    try:
        async with asyncio.timeout(timeout_s):
            yield
    except TimeoutError as exc:
        raise BrokerUnavailableError(
            bootstrap=bootstrap, reason=f"no answer within {timeout_s:g} s"
        ) from exc
    except KafkaError as exc:
        raise BrokerUnavailableError(
            bootstrap=bootstrap, reason=str(exc) or type(exc).__name__
        ) from exc


def unreachable(bootstrap: str) -> BrokerUnavailableError:
    """The error of a client whose start found no broker at `bootstrap` to connect to."""
    return BrokerUnavailableError(
        bootstrap=bootstrap,
        reason="could not be reached (no connection was accepted: is a broker running there? "
        "CTXSTREAM_KAFKA_BOOTSTRAP names it)",
    )
