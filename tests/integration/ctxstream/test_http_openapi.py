"""The OpenAPI document lists every answer the HTTP API gives, route by route.

The answers are not taken from the table the document is built from
(:mod:`ctxstream.api.responses`): every route of a real server, on the real
broker and worker, is sent the bad inputs that produce each error it can
give, and each status and code seen must be documented for that route (as
the status's ``examples.<code>``). Every code the app's error handlers
answer (:data:`ctxstream.api.errors.ErrorCode`) must be documented somewhere.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final, get_args

import pytest

from ctxstream.api.errors import ErrorCode
from schemas.event import event_to_json
from tests.conftest import unique_topic
from tests.integration.ctxstream.test_http_api import MAX_BODY_BYTES, Api, api, call
from tests.support.events import text_event

__all__ = ["api"]  # the fixture, shared with the module that defines it

pytestmark = pytest.mark.integration

READ_TIMEOUT_S: Final = "30"
_SESSION: Final = "/v1/sessions/{session_key}"
Seen = dict[tuple[str, str], set[tuple[int, str]]]


def _key() -> str:
    return f"acme/support/{unique_topic('u')}/s"


async def _existing(api: Api) -> tuple[str, int]:
    """A session of acme with one record, folded; its key and that record's offset."""
    key = _key()
    body = event_to_json(text_event("e1", "inv1", 1.0, "question"))
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/events", body=body)
    assert status == 200, answer
    offset = answer["offset"]
    params = {"min_offset": str(offset), "timeout_s": READ_TIMEOUT_S}
    status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=params)
    assert status == 200, answer
    return key, offset


async def _drive(api: Api) -> Seen:
    """Send every route the inputs that make it fail; the (status, code)s seen per route."""
    existing, offset = await _existing(api)
    missing, bad = _key(), "acme/bad/u1/s%0A1"
    event = event_to_json(text_event("e2", "inv2", 2.0, "again"))
    fork = {"at_offset": offset, "new_session_key": _key()}
    posts: dict[str, Any] = {
        "events": event,
        "events:batch": {"events": [event]},
        "rewind": {"before_invocation_id": "inv1"},
        "fork": fork,
    }
    gets = {
        "context": {"timeout_s": READ_TIMEOUT_S},
        "projection": {"timeout_s": READ_TIMEOUT_S},
        "summaries/summary-1/events": {"timeout_s": READ_TIMEOUT_S},
    }
    template = {"summaries/summary-1/events": "summaries/{summary_id}/events"}
    seen: Seen = defaultdict(set)

    async def send(method: str, tail: str, session: str, **arguments: Any) -> None:
        route = (method.lower(), f"{_SESSION}/{template.get(tail, tail)}")
        status, answer = await call(api, method, f"/v1/sessions/{session}/{tail}", **arguments)
        assert status != 200, (route, answer)
        assert answer is not None, (route, status)
        seen[route].add((status, answer["error"]))

    for tail, body in posts.items():
        await send("POST", tail, existing, body=body, tenant=None)
        await send("POST", tail, existing, body=body, tenant="globex")
        await send("POST", tail, bad, body=body)
        await send("POST", tail, existing, raw=b'{"id": ')
        await send("POST", tail, existing, raw=b" " * (MAX_BODY_BYTES + 1))
    await send("POST", "rewind", missing, body=posts["rewind"])
    await send("POST", "rewind", existing, body={"before_invocation_id": "never"})
    await send("POST", "fork", missing, body=fork)
    for tail, params in gets.items():
        await send("GET", tail, existing, params=params, tenant=None)
        await send("GET", tail, existing, params=params, tenant="globex")
        await send("GET", tail, bad, params=params)
        await send("GET", tail, existing, params={"timeout_s": "0"})
        await send("GET", tail, missing, params=params)
    await send("GET", "summaries/summary-1/events", existing, params=gets["context"])
    await send("GET", "context", missing, params={"agent": "root", "timeout_s": READ_TIMEOUT_S})
    await send("GET", "context", missing, params={"min_offset": str(offset), "timeout_s": "30"})
    await send("GET", "context", missing, params={"as_of": str(offset), "timeout_s": "30"})
    deletion = ("delete", _SESSION)
    for session, tenant in ((existing, None), (existing, "globex"), (bad, "acme")):
        status, answer = await call(api, "DELETE", f"/v1/sessions/{session}", tenant=tenant)
        seen[deletion].add((status, answer["error"]))
    history = ("get", f"{_SESSION}/events")
    for session, tenant, params in (
        (existing, None, {}),
        (existing, "globex", {}),
        (bad, "acme", {}),
        (existing, "acme", {"limit": "0"}),
        (missing, "acme", {"min_offset": "0", "timeout_s": "0.1"}),
    ):
        status, answer = await call(
            api, "GET", f"/v1/sessions/{session}/events", tenant=tenant, params=params
        )
        seen[history].add((status, answer["error"]))
    listing = ("get", "/v1/tenants/{tenant}/sessions")
    for tenant, params in ((None, {}), ("globex", {}), ("acme", {"cursor": "x"})):
        status, answer = await call(
            api, "GET", "/v1/tenants/acme/sessions", tenant=tenant, params=params
        )
        seen[listing].add((status, answer["error"]))
    subscribe = ("get", "/v1/tenants/{tenant}/projections:subscribe")
    for tenant, params in ((None, {}), ("globex", {}), ("acme", {"from_offset": "x:y"})):
        status, answer = await call(
            api, "GET", "/v1/tenants/acme/projections:subscribe", tenant=tenant, params=params
        )
        seen[subscribe].add((status, answer["error"]))
    return seen


def _documented(response: dict[str, Any]) -> set[str]:
    """The codes a documented response names (its examples)."""
    return set(response.get("content", {}).get("application/json", {}).get("examples", {}))


async def test_every_answer_a_route_gives_is_in_its_openapi_responses(api: Api) -> None:
    seen = await _drive(api)
    status, document = await call(api, "GET", "/openapi.json", tenant=None)
    assert status == 200
    # Every route was driven, but the operators' two: a healthy server answers them 200 (their
    # 503 is driven against a dead broker in test_http_operations, and checked documented below).
    assert set(document["paths"]) - {path for _, path in seen} == {"/healthz", "/metrics"}
    assert "unavailable" in _documented(document["paths"]["/healthz"]["get"]["responses"]["503"])
    missing = []
    for (method, path), answers in seen.items():
        responses = document["paths"][path][method]["responses"]
        for status, code in answers:
            if code not in _documented(responses.get(str(status), {})):
                missing.append(f"{method.upper()} {path}: {status} {code}")
    assert missing == []
    # What these inputs must have produced (the answers of this change among them).
    context = seen[("get", f"{_SESSION}/context")]
    assert {(404, "session-not-found"), (422, "invalid-argument")} <= context
    assert (404, "summary-not-found") in seen[
        ("get", f"{_SESSION}/summaries/{{summary_id}}/events")
    ]
    rewind = seen[("post", f"{_SESSION}/rewind")]
    assert {(404, "session-not-found"), (404, "invocation-not-found"), (413, "too-large")} <= rewind
    assert (400, "invalid-json") in seen[("post", f"{_SESSION}/events")]
    deleted = seen[("delete", _SESSION)]
    assert {(401, "unauthorized"), (403, "forbidden"), (422, "invalid-argument")} == deleted


async def test_a_request_no_route_takes_answers_json_documented_in_the_components(
    api: Api,
) -> None:
    key, _ = await _existing(api)
    answers = [
        await call(api, "GET", "/v1/nowhere"),
        await call(api, "POST", f"/v1/sessions/{key}/events/", body={"author": "user"}),
        await call(api, "GET", f"/v1/sessions/{key}/context/"),
        await call(api, "PUT", f"/v1/sessions/{key}/events"),
    ]
    assert [(status, answer["error"]) for status, answer in answers] == [
        (404, "not-found"),
        (404, "not-found"),
        (404, "not-found"),
        (405, "method-not-allowed"),
    ]
    _, document = await call(api, "GET", "/openapi.json", tenant=None)
    shared = set().union(*map(_documented, document["components"]["responses"].values()))
    assert {"not-found", "method-not-allowed"} <= shared


async def test_a_control_character_in_a_key_is_refused_with_422_naming_it(api: Api) -> None:
    for method, tail in (("GET", "context"), ("POST", "events")):
        body = {"author": "user", "timestamp": 1.0}
        status, answer = await call(
            api, method, f"/v1/sessions/acme/bad/u1/s%0A1/{tail}", body=body
        )
        assert (status, answer["error"]) == (422, "invalid-argument"), answer
        assert answer["reason"].startswith("session_key:")


async def test_every_error_code_of_the_app_is_documented_somewhere(api: Api) -> None:
    status, document = await call(api, "GET", "/openapi.json", tenant=None)
    assert status == 200
    documented: set[str] = set()
    for operations in document["paths"].values():
        for operation in operations.values():
            for response in operation["responses"].values():
                documented |= _documented(response)
    for response in document["components"]["responses"].values():
        documented |= _documented(response)
    codes: tuple[ErrorCode, ...] = get_args(ErrorCode)
    assert set(codes) - documented == set()
