"""What the HTTP API's routes are served with: the started collaborators of ``ctxstream serve``.

:func:`ctxstream.api.server.started_services` starts them;
:func:`ctxstream.api.app.build_app` hands them to every route.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ctxstream.api.auth import Authenticator
from ctxstream.api.health import BrokerHealth
from ctxstream.api.key_store import KeyDirectory
from ctxstream.api.metrics import ApiMetrics
from ctxstream.api.oversized_sessions import OversizedSessions
from ctxstream.api.settings import ServeSettings
from ctxstream.api.tenant_budgets import TenantBudgets
from ctxstream.client import Client
from ctxstream.sessions.catalog import SessionCatalog


@dataclass(frozen=True, slots=True)
class ApiServices:
    """What the routes use: settings, client, live keys, key check, budgets, metrics, catalog."""

    settings: ServeSettings
    client: Client
    keys: KeyDirectory
    auth: Authenticator
    stopping: asyncio.Event
    """Set when the server begins to stop: open subscriptions end then."""
    budgets: TenantBudgets
    oversized: OversizedSessions
    """Sessions over their size cap, whose appends are refused."""
    metrics: ApiMetrics
    """The app's Prometheus metrics (``GET /metrics``)."""
    health: BrokerHealth
    """The look at the broker ``GET /healthz`` answers from."""
    sessions: SessionCatalog | None = None
    """The SQL read model's listings and histories; None without ``POSTGRES_DSN``."""
