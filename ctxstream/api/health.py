"""Whether ``ctxstream serve`` can do its work now: what ``GET /healthz`` answers.

Two checks, both needed for any request to succeed:

* the broker: a metadata request answered within :data:`PROBE_TIMEOUT_S`, in
  which the deployment's `events` topic has a leader for every partition (so
  an append can be written);
* the API keys: the key directory follows the `api-keys` topic and has
  heard from the broker within ``HTTP_KEYS_MAX_STALENESS_S`` (otherwise every
  request is answered 503).

More in ``ctxstream/api/README.md`` (health.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError

from schemas.kafka.settings import KafkaSettings

logger = logging.getLogger(__name__)

#: How long one look at the broker may take before it counts as no answer.
PROBE_TIMEOUT_S: Final = 3.0


@dataclass(frozen=True, slots=True)
class BrokerAnswer:
    """One look at the broker: when, and what was wrong (None: nothing)."""

    at: float
    problem: str | None


class BrokerHealth:
    """Looks at the broker at most once per `fresh_s`, on `clock`'s time."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        fresh_s: float,
        clock: Callable[[], float],
        on_probe: Callable[[bool], None] = lambda _: None,
    ) -> None:
        """A probe of the broker and `events` topic `settings` name; `on_probe` sees each answer."""
        self._bootstrap = settings.kafka_bootstrap
        self._security = settings.client_security()
        self._events = settings.topic("events")
        self._fresh_s, self.clock, self._on_probe = fresh_s, clock, on_probe
        self._client: AIOKafkaClient | None = None
        self._last: BrokerAnswer | None = None
        self._asking: asyncio.Future[BrokerAnswer] | None = None

    async def answer(self) -> BrokerAnswer:
        """The last look at the broker, or a new one when it is older than `fresh_s`."""
        last = self._last
        if last is not None and self.clock() - last.at < self._fresh_s:
            return last
        if self._asking is None:
            self._asking = asyncio.ensure_future(self._ask())
        # Shielded: a caller that goes away does not cancel the others' answer.
        return await asyncio.shield(self._asking)

    async def close(self) -> None:
        """Close the probe's client (after the server stopped answering)."""
        asking, self._asking = self._asking, None
        if asking is not None:
            asking.cancel()
            await asyncio.gather(asking, return_exceptions=True)
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _ask(self) -> BrokerAnswer:
        try:
            problem = await asyncio.wait_for(self._problem(), PROBE_TIMEOUT_S)
        except TimeoutError:
            problem = f"the broker did not answer within {PROBE_TIMEOUT_S:g} s"
        answer = BrokerAnswer(self.clock(), problem)
        was = self._last
        if problem is not None and (was is None or was.problem != problem):
            logger.warning("health: %s (broker %s)", problem, self._bootstrap)
        elif problem is None and was is not None and was.problem is not None:
            logger.info("health: the broker answers again")
        self._last, self._asking = answer, None
        self._on_probe(problem is None)
        return answer

    async def _problem(self) -> str | None:
        """What keeps the server from its work, as the broker answers now (None: nothing)."""
        try:
            client = await self._connected()
            cluster = await client.fetch_all_metadata()
        except (KafkaError, OSError) as exc:
            # The type only: /healthz answers anyone, and the detail names hosts (logged).
            logger.debug("health: the broker did not answer: %r", exc)
            return f"the broker did not answer a metadata request ({type(exc).__name__})"
        partitions = cluster.partitions_for_topic(self._events)
        if not partitions:
            return f"the broker has no topic {self._events!r}: run 'ctxstream topics create'"
        led = cluster.available_partitions_for_topic(self._events)
        if len(led) < len(partitions):
            missing = len(partitions) - len(led)
            return (
                f"partitions of {self._events!r} without a leader: {missing} of {len(partitions)}"
            )
        return None

    async def _connected(self) -> AIOKafkaClient:
        if self._client is None:
            client = AIOKafkaClient(
                bootstrap_servers=self._bootstrap,
                request_timeout_ms=int(PROBE_TIMEOUT_S * 1000),
                client_id="ctxstream-health",
                **self._security,
            )
            try:
                await client.bootstrap()
            except BaseException:
                await client.close()
                raise
            self._client = client
        return self._client
