"""Every budget the HTTP API holds tenants to, built from its settings, on a clock passed in.

More in ``ctxstream/api/README.md`` (tenant_budgets.py).
"""

from __future__ import annotations

from typing import Final

from ctxstream.api.concurrency_budget import ConcurrencyBudget
from ctxstream.api.errors import ApiError
from ctxstream.api.rate_budget import Clock, RateBudget
from ctxstream.api.settings import ServeSettings
from schemas.read_protocol import HistoryStart

#: What a heavy read costs at least, whatever its answer: its work is O(session).
HEAVY_READ_MIN_COST: Final = 64 * 1024
#: A tenant's forks may read this many seconds of their rate of source records at once.
FORK_RECORDS_BURST_S: Final = 16
#: A tenant's heavy reads may answer this many seconds of their rate at once.
HEAVY_READ_BURST_S: Final = 16


class TenantBudgets:
    """One server's budgets: slots for reads and subscriptions, buckets for appends and forks."""

    def __init__(self, settings: ServeSettings, clock: Clock) -> None:
        """The budgets `settings` set, timed by `clock`."""
        self.max_batch_events = settings.http_max_batch_events
        self.max_batch_bytes = min(settings.http_max_batch_bytes, settings.http_max_body_bytes)
        self.reads = _slots(settings, "reads", "http_tenant_max_reads", "http_max_reads")
        self.subscriptions = _slots(
            settings, "subscriptions", "http_tenant_max_subscriptions", "http_max_subscriptions"
        )
        self._append_events = _rate(
            settings,
            "appended events",
            "http_tenant_append_events_per_s",
            self.max_batch_events,
            clock,
        )
        self._append_bytes = _rate(
            settings,
            "appended bytes",
            "http_tenant_append_bytes_per_s",
            self.max_batch_bytes,
            clock,
        )
        per_minute = settings.http_tenant_forks_per_minute
        self._forks = RateBudget(
            "forks",
            "HTTP_TENANT_FORKS_PER_MINUTE",
            rate_per_s=per_minute / 60,
            burst=max(1.0, per_minute),
            clock=clock,
        )

        self._fork_records = _rate(
            settings,
            "fork records",
            "http_tenant_fork_records_per_s",
            settings.http_tenant_fork_records_per_s * FORK_RECORDS_BURST_S,
            clock,
        )
        self._heavy_reads = _rate(
            settings,
            "heavy-read bytes",
            "http_tenant_heavy_read_bytes_per_s",
            settings.http_tenant_heavy_read_bytes_per_s * HEAVY_READ_BURST_S,
            clock,
        )

    def admit_heavy_read(self, tenant: str) -> None:
        """Let `tenant` start a heavy read (an as-of context, a rewind) unless in debt.

        Raises:
            OverBudgetError: Its earlier heavy reads answered more than its rate has
                paid back yet; retry after the wait.
        """
        self._heavy_reads.admit(tenant)

    def charge_heavy_read(self, tenant: str, answer_bytes: int) -> None:
        """Count a heavy read that answered `answer_bytes` (at least the minimum cost)."""
        self._heavy_reads.charge(tenant, max(answer_bytes, HEAVY_READ_MIN_COST))

    def check_batch(self, events: int) -> None:
        """Refuse a batch of more events than one may carry (its bytes were bounded as read).

        Raises:
            ApiError: ``too-large`` naming the limit and its setting.
        """
        if events > self.max_batch_events:
            raise ApiError(
                "too-large",
                f"the batch has {events} events, at most {self.max_batch_events} "
                "(HTTP_MAX_BATCH_EVENTS)",
                budget="HTTP_MAX_BATCH_EVENTS",
            )

    def spend_append(self, tenant: str, events: int, body_bytes: int) -> None:
        """Count an append of `events` events in `body_bytes` against `tenant`'s rates.

        Nothing is counted when either rate refuses.

        Raises:
            OverBudgetError: The tenant is past its events or bytes rate; retry after its wait.
        """
        waits = [
            (self._append_events.wait_s(tenant, events), self._append_events),
            (self._append_bytes.wait_s(tenant, body_bytes), self._append_bytes),
        ]
        wait_s, budget = max(waits, key=lambda pair: pair[0])
        if wait_s > 0:
            raise budget.refusal(tenant, wait_s)
        self._append_events.take(tenant, events)
        self._append_bytes.take(tenant, body_bytes)

    def spend_fork(self, tenant: str) -> None:
        """Count one fork against `tenant`'s rate, unless its earlier forks' reading is unpaid.

        Raises:
            OverBudgetError: The tenant started its forks of the minute, or its
                forks read more of their sources than its rate has paid back;
                retry after its wait.
        """
        self._fork_records.admit(tenant)
        self._forks.take(tenant, 1)

    def charge_fork(self, tenant: str, source: HistoryStart, at_offset: int) -> None:
        """Count the records a fork of `source` up to `at_offset` reads and folds.

        From the source's first offset (the log start when it is not known) up
        to the fork's offset: other sessions' records between are read too.
        """
        first = source.first_offset if source.first_offset >= 0 else 0
        self._fork_records.charge(tenant, max(1, at_offset - first + 1))


def _slots(
    settings: ServeSettings, name: str, tenant_field: str, server_field: str
) -> ConcurrencyBudget:
    """The concurrency budget of two settings, named by their variables."""
    return ConcurrencyBudget(
        name,
        tenant_limit=getattr(settings, tenant_field),
        server_limit=getattr(settings, server_field),
        tenant_setting=tenant_field.upper(),
        server_setting=server_field.upper(),
    )


def _rate(settings: ServeSettings, name: str, field: str, burst: float, clock: Clock) -> RateBudget:
    """The rate budget of a per-second setting, named by its variable, in bursts of `burst`."""
    return RateBudget(
        name, field.upper(), rate_per_s=getattr(settings, field), burst=burst, clock=clock
    )
