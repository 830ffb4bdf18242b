"""``DELETE /v1/sessions/{session_key}`` on the real broker and worker.

The deletion's offset comes back; a read waiting for it answers 404
session-not-found saying the session was deleted; another tenant's key is
refused as on every other route (403) and deletes nothing; a session without
records deletes without error; a subscription streams the deletion as a
``deleted`` event. The oracles are the texts the test appended.
"""

from __future__ import annotations

from typing import Final

import orjson
import pytest

from ctxstream.api.positions import parse_position
from schemas.event import event_to_json
from tests.conftest import unique_topic
from tests.integration.ctxstream.test_http_api import Api, _stream_until, api, call
from tests.support.events import text_event
from tests.support.http_api import SseEvent

__all__ = ["api"]  # the fixture, shared with the module that defines it

pytestmark = pytest.mark.integration

READ_TIMEOUT_S: Final = "30"


def _key() -> str:
    return f"acme/support/{unique_topic('u')}/s"


async def _appended(api: Api, key: str, text: str, number: int) -> int:
    body = event_to_json(text_event(f"q{number}", f"inv{number}", float(number), text))
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/events", body=body)
    assert status == 200, answer
    offset: int = answer["offset"]
    return offset


async def _context(api: Api, key: str, offset: int) -> tuple[int, dict[str, object]]:
    params = {"min_offset": str(offset), "timeout_s": READ_TIMEOUT_S}
    return await call(api, "GET", f"/v1/sessions/{key}/context", params=params)


def _texts(answer: dict[str, object]) -> list[str]:
    contents = answer["contents"]
    assert isinstance(contents, list)
    return [part["text"] for content in contents for part in content["parts"]]


async def test_a_deleted_session_reads_404_and_starts_afresh(api: Api) -> None:
    key = _key()
    first = await _appended(api, key, "old", 1)
    status, answer = await call(api, "DELETE", f"/v1/sessions/{key}")
    assert status == 200, answer
    assert set(answer) == {"offset"}
    assert answer["offset"] > first
    status, refused = await _context(api, key, answer["offset"])
    assert (status, refused["error"]) == (404, "session-not-found")
    assert "deleted" in str(refused["reason"])

    fresh = await _appended(api, key, "new", 2)
    status, context = await _context(api, key, fresh)
    assert status == 200, context
    assert _texts(context) == ["new"]


async def test_another_tenants_key_deletes_nothing(api: Api) -> None:
    key = _key()
    offset = await _appended(api, key, "kept", 1)
    status, answer = await call(api, "DELETE", f"/v1/sessions/{key}", tenant="globex")
    assert (status, answer["error"]) == (403, "forbidden")
    status, context = await _context(api, key, offset)
    assert status == 200, context
    assert _texts(context) == ["kept"]


async def test_deleting_a_session_without_records_is_no_error(api: Api) -> None:
    key = _key()
    status, answer = await call(api, "DELETE", f"/v1/sessions/{key}")
    assert status == 200, answer
    status, refused = await _context(api, key, answer["offset"])
    assert (status, refused["error"]) == (404, "session-not-found")


async def test_a_subscription_streams_the_deletion_as_a_deleted_event(api: Api) -> None:
    key = _key()
    first = await _appended(api, key, "old", 1)
    assert (await _context(api, key, first))[0] == 200
    status, answer = await call(api, "DELETE", f"/v1/sessions/{key}")
    assert status == 200, answer
    assert (await _context(api, key, answer["offset"]))[0] == 404

    def _deleted(events: list[SseEvent]) -> bool:
        return any(event.event == "deleted" for event in events)

    params = {"sessions": key, "from_offset": "0"}
    events = await _stream_until(api, params, _deleted)
    assert [event.event for event in events] == ["snapshot", "deleted"]
    item = orjson.loads(events[-1].data)
    assert item["deleted"] == key
    assert events[-1].id is not None
    assert parse_position(events[-1].id, name="id")[item["partition"]] == item["offset"] + 1
