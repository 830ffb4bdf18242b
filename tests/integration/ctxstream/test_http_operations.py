"""``GET /healthz`` and ``GET /metrics`` of the HTTP API, over real HTTP on the real broker.

One ``ctxstream serve`` process for the module, on a deployment with only its
topics (no worker: appends and the two routes need none), with an append
budget of one event so that the second append is refused 429. A second app,
the same one in this process, is pointed at a port nothing listens on.
The metrics are read with prometheus_client's own parser.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from ctxstream.api.app import build_app
from ctxstream.api.auth import Authenticator
from ctxstream.api.health import BrokerHealth
from ctxstream.api.key_store import KeyDirectory
from ctxstream.api.metrics import ApiMetrics
from ctxstream.api.oversized_sessions import OversizedSessions
from ctxstream.api.services import ApiServices
from ctxstream.api.settings import ServeSettings
from ctxstream.api.tenant_budgets import TenantBudgets
from ctxstream.client import Client
from tests.conftest import free_ports, unique_topic
from tests.support.http_api import create_key, start_server
from tests.support.kafka import create_deployment_topics, projector_settings, stop_worker, wait_for

pytestmark = pytest.mark.integration

TENANT: Final = "acme"
APPEND_ROUTE: Final = "/v1/sessions/{session_key:anykey}/events"
#: One event a tenant may append, then one every 1,000 s: the second append is refused.
BUDGETS: Final = {
    "http_max_batch_events": "1",
    "http_tenant_append_events_per_s": "0.001",
    "http_health_cache_s": "600",  # every probe of the module after the first is answered from it
}
PROBES: Final = 20
CALL_TIMEOUT = aiohttp.ClientTimeout(total=30)


@dataclass(frozen=True)
class Served:
    """Where the module's server answers, and a key of :data:`TENANT`."""

    url: str
    key: str


@pytest.fixture(scope="module")
def served(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``ctxstream serve`` with :data:`BUDGETS` on a deployment of its own topics."""
    folder = tmp_path_factory.mktemp("operations")
    settings = projector_settings(kafka_bootstrap, unique_topic("operations"))
    asyncio.run(create_deployment_topics(settings))
    key = create_key(settings, TENANT)
    server = start_server(settings, free_ports(1)[0], folder / "serve.log", **BUDGETS)
    try:
        yield Served(server.url, key)
    finally:
        stop_worker(server.process)


async def _get(url: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession(timeout=CALL_TIMEOUT) as http,
        http.get(url) as response,
    ):
        return response.status, await response.text()


async def _append(served: Served, session_key: str) -> int:
    event = {
        "author": "user",
        "timestamp": time.time(),
        "content": {"role": "user", "parts": [{"text": "hello"}]},
    }
    headers = {"Authorization": f"Bearer {served.key}"}
    async with (
        aiohttp.ClientSession(timeout=CALL_TIMEOUT) as http,
        http.post(
            f"{served.url}/v1/sessions/{session_key}/events",
            data=orjson.dumps(event),
            headers=headers,
        ) as response,
    ):
        return response.status


def _samples(text: str) -> list[Sample]:
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def _value(samples: list[Sample], name: str, **labels: str) -> float:
    """The value of the sample `name` with exactly `labels` (0 when there is none)."""
    found = [s.value for s in samples if s.name == name and s.labels == labels]
    assert len(found) <= 1, found
    return found[0] if found else 0.0


def test_healthz_answers_ok_while_the_broker_answers_and_asks_it_once_a_period(
    served: Served,
) -> None:
    async def probes() -> list[tuple[int, str]]:
        first = await _get(f"{served.url}/healthz")
        rest = await asyncio.gather(*(_get(f"{served.url}/healthz") for _ in range(PROBES - 1)))
        return [first, *rest]

    answers = asyncio.run(probes())
    assert [status for status, _ in answers] == [200] * PROBES, answers
    body = orjson.loads(answers[0][1])
    assert body["status"] == "ok"
    assert body["checks"] == ["broker", "api-keys"]
    status, text = asyncio.run(_get(f"{served.url}/metrics"))
    assert status == 200
    samples = _samples(text)
    # HTTP_HEALTH_CACHE_S is 600: the broker was asked once for all the probes.
    assert _value(samples, "ctxstream_api_broker_probes_total", answer="ok") == 1
    assert _value(samples, "ctxstream_api_broker_probes_total", answer="failed") == 0
    healthz = {"route": "/healthz", "method": "GET", "status": "200"}
    assert _value(samples, "ctxstream_api_requests_total", **healthz) == PROBES


def test_metrics_count_an_append_and_its_refusal_by_route_and_budget(served: Served) -> None:
    session = f"{TENANT}/support/{unique_topic('u')}/s1"
    assert asyncio.run(_append(served, session)) == 200
    assert asyncio.run(_append(served, session)) == 429

    status, text = asyncio.run(_get(f"{served.url}/metrics"))
    assert status == 200
    samples = _samples(text)
    appended = {"route": APPEND_ROUTE, "method": "POST"}
    assert _value(samples, "ctxstream_api_requests_total", **appended, status="200") == 1
    assert _value(samples, "ctxstream_api_requests_total", **appended, status="429") == 1
    assert _value(samples, "ctxstream_api_request_seconds_count", **appended, status="429") == 1
    refused = {"budget": "HTTP_TENANT_APPEND_EVENTS_PER_S"}
    assert _value(samples, "ctxstream_api_budget_refusals_total", **refused) == 1
    assert _value(samples, "ctxstream_api_events_appended_total") == 1
    assert _value(samples, "ctxstream_api_subscriptions_open") == 0
    # Bounded labels: neither the tenant nor the session is in any of them.
    values = {value for sample in samples for value in sample.labels.values()}
    assert not [value for value in values if TENANT in value or session in value], values


def test_both_routes_are_in_the_openapi_document(served: Served) -> None:
    status, text = asyncio.run(_get(f"{served.url}/openapi.json"))
    assert status == 200
    paths = orjson.loads(text)["paths"]
    assert set(paths["/healthz"]["get"]["responses"]) >= {"200", "503"}
    assert "text/plain" in str(paths["/metrics"]["get"]["responses"]["200"]["content"])


def _unreachable_services(port: int) -> ApiServices:
    """The services of an app whose broker is a port nothing listens on (none started)."""
    settings = ServeSettings(kafka_bootstrap=f"127.0.0.1:{port}", topic_prefix=unique_topic("gone"))
    keys = KeyDirectory(settings)
    budgets = TenantBudgets(settings, time.monotonic)
    metrics = ApiMetrics(budgets)
    health = BrokerHealth(
        settings, fresh_s=2.0, clock=time.monotonic, on_probe=metrics.broker_probed
    )
    return ApiServices(
        settings,
        Client(settings=settings),
        keys,
        Authenticator(keys),
        asyncio.Event(),
        budgets,
        OversizedSessions(settings, max_sessions=10),
        metrics,
        health,
    )


async def _served_healthz(services: ApiServices, port: int) -> tuple[int, dict[str, Any]]:
    """``GET /healthz`` of `services`' app, served by uvicorn in this loop on `port`."""
    config = uvicorn.Config(
        build_app(services), host="127.0.0.1", port=port, lifespan="off", log_config=None
    )
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve())

    async def started() -> bool:
        return server.started

    try:
        await wait_for("uvicorn serving", started, 30.0)
        status, text = await _get(f"http://127.0.0.1:{port}/healthz")
        return status, orjson.loads(text)
    finally:
        server.should_exit = True
        await serving
        await services.health.close()


def test_healthz_answers_503_naming_the_broker_when_it_cannot_be_reached(tmp_path: Path) -> None:
    broker_port, http_port = free_ports(2)
    services = _unreachable_services(broker_port)
    status, body = asyncio.run(_served_healthz(services, http_port))
    assert status == 503, body
    assert body["error"] == "unavailable"
    assert body["reason"].startswith("the broker did not answer"), body
    assert "\n" not in body["reason"]
    assert str(broker_port) not in body["reason"]  # the address is logged, not answered
