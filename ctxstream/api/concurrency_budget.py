"""A concurrency budget: at most so many calls at once per tenant, and per server. No I/O.

A call holds a :class:`Lease` while it runs; past either limit it is refused
at once (never queued), so a tenant with every slot of its own taken still
leaves the server's others to the rest. Release is synchronous and idempotent:
it runs whole in a ``finally`` even when the call is being cancelled.

Example: ``ConcurrencyBudget("concurrent reads", tenant_limit=8, server_limit=64,
...)``: a tenant's ninth parked read is refused while another tenant's first
goes through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from ctxstream.errors import OverBudgetError

#: What a refused caller is told to wait: a held call ends when it ends, unknown when.
RETRY_AFTER_S: Final = 1.0


class Lease:
    """One slot of a tenant's, held until :meth:`release`."""

    def __init__(self, budget: ConcurrencyBudget, tenant: str) -> None:
        """A slot `budget` has counted for `tenant`."""
        self._budget: ConcurrencyBudget | None = budget
        self._tenant = tenant

    def release(self) -> None:
        """Give the slot back (again: nothing)."""
        budget, self._budget = self._budget, None
        if budget is not None:
            budget.release(self._tenant)


class ConcurrencyBudget:
    """Slots per tenant and per server, named by what they count and their settings."""

    def __init__(
        self,
        name: str,
        *,
        tenant_limit: int,
        server_limit: int,
        tenant_setting: str,
        server_setting: str,
    ) -> None:
        """A budget of `tenant_limit` slots per tenant and `server_limit` in all."""
        if tenant_limit < 1 or server_limit < 1:
            raise ValueError("a concurrency budget needs at least one slot")
        self.name = name
        self._tenant_limit, self._server_limit = tenant_limit, server_limit
        self._tenant_setting, self._server_setting = tenant_setting, server_setting
        self._held: Counter[str] = Counter()
        self._total = 0

    def held(self, tenant: str) -> int:
        """How many slots `tenant` holds."""
        return self._held[tenant]

    @property
    def total(self) -> int:
        """How many slots are held in all."""
        return self._total

    def acquire(self, tenant: str) -> Lease:
        """A slot for `tenant`.

        Raises:
            OverBudgetError: `tenant` holds its limit, or the server all of its slots.
        """
        if self._held[tenant] >= self._tenant_limit:
            raise OverBudgetError(
                RETRY_AFTER_S,
                f"tenant {tenant!r} has {self._tenant_limit} {self.name} open, "
                f"its limit ({self._tenant_setting})",
                budget=self._tenant_setting,
            )
        if self._total >= self._server_limit:
            raise OverBudgetError(
                RETRY_AFTER_S,
                f"the server has {self._server_limit} {self.name} open, "
                f"its limit ({self._server_setting})",
                budget=self._server_setting,
            )
        self._held[tenant] += 1
        self._total += 1
        return Lease(self, tenant)

    @contextmanager
    def holding(self, tenant: str) -> Iterator[Lease]:
        """A slot for `tenant` while the block runs (raises as :meth:`acquire`)."""
        lease = self.acquire(tenant)
        try:
            yield lease
        finally:
            lease.release()

    def release(self, tenant: str) -> None:
        """Give back one of `tenant`'s slots (a :class:`Lease` calls it once)."""
        self._held[tenant] -= 1
        if self._held[tenant] <= 0:
            del self._held[tenant]
        self._total -= 1
