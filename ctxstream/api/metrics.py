"""The HTTP API's Prometheus metrics, in a registry of each app's own (``GET /metrics``).

More in ``ctxstream/api/README.md`` (metrics.py).
"""

from __future__ import annotations

import time
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ctxstream.api.errors import REFUSED_BY
from ctxstream.api.tenant_budgets import TenantBudgets

#: Seconds to an answer: a read may wait up to its timeout_s (at most 60 s).
_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: The ``route`` of a request no route matched.
UNMATCHED: Final = "unmatched"


class ApiMetrics:
    """The metrics of one app, in a registry of their own."""

    def __init__(self, budgets: TenantBudgets) -> None:
        """Metrics that read the open reads and subscriptions from `budgets` when scraped."""
        self.registry = CollectorRegistry(auto_describe=True)
        prefix = "ctxstream_api"
        labels = ["route", "method", "status"]
        self.requests = Counter(
            f"{prefix}_requests",
            "Answers, by route template, method and status.",
            labels,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            f"{prefix}_request_seconds",
            "Seconds from a request to its answer's status line.",
            labels,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.budget_refusals = Counter(
            f"{prefix}_budget_refusals",
            "Requests a budget refused, by the setting that sets it.",
            ["budget"],
            registry=self.registry,
        )
        self.events_appended = Counter(
            f"{prefix}_events_appended",
            "Events appended through events and events:batch.",
            registry=self.registry,
        )
        self.broker_probes = Counter(
            f"{prefix}_broker_probes",
            "Looks at the broker /healthz took, by answer.",
            ["answer"],
            registry=self.registry,
        )
        subscriptions = Gauge(
            f"{prefix}_subscriptions_open", "Subscriptions open now.", registry=self.registry
        )
        subscriptions.set_function(lambda: budgets.subscriptions.total)
        reads = Gauge(f"{prefix}_reads_open", "Reads open now.", registry=self.registry)
        reads.set_function(lambda: budgets.reads.total)

    def broker_probed(self, answered: bool) -> None:
        """Count one look at the broker."""
        self.broker_probes.labels(answer="ok" if answered else "failed").inc()

    def answered(self, scope: Scope, status: int, seconds: float) -> None:
        """Count the answer to the request of `scope`: its route, status and time."""
        template = getattr(scope.get("route"), "path", None)
        method = str(scope.get("method", ""))
        labels = {
            "route": template if isinstance(template, str) else UNMATCHED,
            "method": method if method in _METHODS else "other",
            "status": str(status),
        }
        self.requests.labels(**labels).inc()
        self.request_seconds.labels(**labels).observe(seconds)
        budget = scope.get("state", {}).get(REFUSED_BY)
        if isinstance(budget, str):
            self.budget_refusals.labels(budget=budget).inc()

    def exposition(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware that counts each HTTP answer in :class:`ApiMetrics`.

    The time is taken when the answer's status line is sent (a subscription's
    stream goes on after it); a request that fails before any answer counts
    as 500, the status the server then sends.
    """

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        """Count the answers of `app` in `metrics`."""
        self._app, self._metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, counting its answer."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        answered = False

        async def counted(message: Message) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                status = int(message["status"])
                self._metrics.answered(scope, status, time.perf_counter() - started)
            await send(message)

        try:
            await self._app(scope, receive, counted)
        except Exception:
            if not answered:
                self._metrics.answered(scope, 500, time.perf_counter() - started)
            raise
