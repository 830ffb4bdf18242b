"""A rate budget per tenant: a token bucket each, on a clock passed in. No I/O.

A bucket holds up to ``burst`` tokens and gains ``rate_per_s`` a second; a
call takes as many as it costs (events, bytes, forks) or is refused with the
seconds until enough have come back. A tenant at its rate so never delays
another, and one burst of at most ``burst`` goes through at once.

Example: ``RateBudget("append events", "HTTP_TENANT_APPEND_EVENTS_PER_S",
rate_per_s=2_000, burst=1_000, clock=time.monotonic)``; a tenant's batch of
1,000 events empties its bucket, and another of 1,000 half a second later
goes through; one sooner is refused with ``retry_after_s`` = the rest of that
half second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ctxstream.errors import OverBudgetError

Clock = Callable[[], float]
"""Seconds from any fixed point, never going back (``time.monotonic``)."""


@dataclass(slots=True)
class TokenBucket:
    """Up to `burst` tokens, refilled at `rate_per_s` since `stamp`."""

    rate_per_s: float
    burst: float
    tokens: float
    stamp: float

    def refill(self, now: float) -> None:
        """Add what has come back since the last call (never beyond `burst`)."""
        elapsed = max(0.0, now - self.stamp)
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate_per_s)
        self.stamp = max(self.stamp, now)

    def wait_s(self, cost: float, now: float) -> float:
        """Seconds until `cost` tokens are there (0: now); a cost over `burst` waits for `burst`."""
        self.refill(now)
        missing = min(cost, self.burst) - self.tokens
        return max(0.0, missing / self.rate_per_s)

    def take(self, cost: float) -> None:
        """Take `cost` tokens (after :meth:`wait_s` said 0)."""
        self.tokens -= min(cost, self.burst)


class RateBudget:
    """One bucket per tenant, all alike; named by what it counts and the setting that sets it."""

    def __init__(
        self, name: str, setting: str, *, rate_per_s: float, burst: float, clock: Clock
    ) -> None:
        """A budget of `rate_per_s` with bursts of `burst` for every tenant."""
        if rate_per_s <= 0 or burst <= 0:
            raise ValueError("a rate budget needs a positive rate and burst")
        self.name, self.setting = name, setting
        self._rate_per_s, self._burst, self._clock = rate_per_s, burst, clock
        self._buckets: dict[str, TokenBucket] = {}

    def wait_s(self, tenant: str, cost: float) -> float:
        """Seconds until `tenant` may spend `cost` (0: now)."""
        return self._bucket(tenant).wait_s(cost, self._clock())

    def take(self, tenant: str, cost: float) -> None:
        """Spend `cost` of `tenant`'s bucket, or refuse.

        Raises:
            OverBudgetError: Not enough has come back yet; ``retry_after_s`` says when it has.
        """
        wait_s = self.wait_s(tenant, cost)
        if wait_s > 0:
            raise self.refusal(tenant, wait_s)
        self._bucket(tenant).take(cost)

    def admit(self, tenant: str) -> None:
        """Let `tenant` start a call whose cost is known only once it ends, unless in debt.

        Raises:
            OverBudgetError: An earlier call's cost is not paid back yet.
        """
        wait_s = self.wait_s(tenant, 1)
        if wait_s > 0:
            raise self.refusal(tenant, wait_s)

    def charge(self, tenant: str, cost: float) -> None:
        """Spend the whole `cost` of a call that ended, into debt if it comes to that.

        A call costing more than `tenant` has so delays its next one for as
        long as the rate takes to pay it back (:meth:`admit`).
        """
        bucket = self._bucket(tenant)
        bucket.refill(self._clock())
        bucket.tokens -= cost

    def refusal(self, tenant: str, wait_s: float) -> OverBudgetError:
        """The error of `tenant` past this budget, to retry after `wait_s`."""
        return OverBudgetError(
            wait_s,
            f"tenant {tenant!r} is over its {self.name} budget "
            f"({self._rate_per_s:g}/s, bursts of {self._burst:g}; {self.setting})",
            budget=self.setting,
        )

    def _bucket(self, tenant: str) -> TokenBucket:
        bucket = self._buckets.get(tenant)
        if bucket is None:
            bucket = TokenBucket(self._rate_per_s, self._burst, self._burst, self._clock())
            self._buckets[tenant] = bucket
        return bucket
