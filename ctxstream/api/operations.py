"""The routes an operator's tools call: ``GET /healthz`` and ``GET /metrics``, without a key.

``/healthz`` answers 200 ``{"status": "ok", ...}`` while the server can do
its work, and 503 with the error body (``unavailable``, the reason in one
line) when it cannot: the checks are :mod:`ctxstream.api.health`'s (the
broker and the `events` topic, asked at most once per
``HTTP_HEALTH_CACHE_S``) and the key directory's (:mod:`ctxstream.api.key_store`).

``/metrics`` is the Prometheus text exposition of :mod:`ctxstream.api.metrics`.
Neither needs an API key: a load balancer or a scraper holds none, and neither
answer names a tenant, a session, a key or a host (the broker's address is
only logged).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict

from ctxstream.api.errors import ApiError
from ctxstream.api.responses import error_responses
from ctxstream.api.services import ApiServices
from schemas.codec import encode

router = APIRouter()

HEALTH_CHECKS = ("broker", "api-keys")
_METRICS_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text exposition format 0.0.4",
        "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
    }
}


class Health(BaseModel):
    """What ``/healthz`` answers while the server can do its work."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["ok"] = "ok"
    checks: list[str]
    """What was checked: the broker (and its `events` topic) and the API keys."""
    broker_checked_s_ago: float
    """How old the look at the broker is (at most ``HTTP_HEALTH_CACHE_S``)."""


def _services(request: Request) -> ApiServices:
    services: ApiServices = request.app.state.services
    return services


@router.get(
    "/healthz",
    response_model=Health,
    responses=error_responses(["unavailable"]),
    summary="Whether the server can serve: the broker answers and the API keys are current",
)
async def healthz(request: Request) -> Response:
    """200 while the broker answers (its `events` topic led) and the keys are current; else 503.

    No API key. The broker is asked at most once per ``HTTP_HEALTH_CACHE_S``.
    """
    services = _services(request)
    answer = await services.health.answer()
    keys = services.keys.problem()
    reasons = [answer.problem] if answer.problem is not None else []
    if keys is not None:
        reasons.append(f"the API keys cannot be checked: {keys}")
    if reasons:
        raise ApiError("unavailable", "; ".join(reasons))
    age_s = max(0.0, services.health.clock() - answer.at)
    body = Health(checks=list(HEALTH_CHECKS), broker_checked_s_ago=round(age_s, 3))
    return Response(encode(body), media_type="application/json")


@router.get(
    "/metrics",
    response_class=Response,
    responses=_METRICS_RESPONSE,
    summary="The server's Prometheus metrics (no tenant, session or key in any label)",
)
async def metrics(request: Request) -> Response:
    """Requests by route template and status, budget refusals, appends, open streams.

    No API key: no label names a tenant, a session or a key.
    """
    return Response(_services(request).metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
