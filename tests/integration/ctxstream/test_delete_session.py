"""``Client.delete_session`` against a real native worker process (the package's ``deployment``).

A deleted session reads as not found, saying it was deleted, from the deletion's
offset on (read-your-writes); an append starts it afresh with only the new
events; deleting a session that never had records is no error (as ADK's
``delete_session``) and leaves it not found. The oracles are the texts the test
appended.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest

from ctxstream import Client, InvalidArgumentError, SessionNotFoundError, Subscribed, SyncClient
from schemas.deletion_mark import is_deletion
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import text_event
from tests.support.http_api import ctxstream_command
from tests.support.kafka import read_log
from tests.support.subscriptions import collect

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


def _texts(client: SyncClient, key: SessionKey, offset: int) -> list[str]:
    contents = client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)
    return [part.text or "" for content in contents for part in content.parts or ()]


def test_a_deleted_session_is_not_found_until_an_append_starts_it_afresh(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    offsets = client.append_many(
        key,
        [text_event("q1", "inv1", 101.0, "old one"), text_event("q2", "inv2", 102.0, "old two")],
    )
    assert _texts(client, key, offsets[-1]) == ["old one", "old two"]

    deleted = client.delete_session(key)
    assert deleted > offsets[-1]
    with pytest.raises(SessionNotFoundError, match=f"deleted .*offset {deleted}"):
        client.context(key, min_offset=deleted, timeout_s=READ_TIMEOUT_S)
    with pytest.raises(SessionNotFoundError, match="deleted"):
        client.projection(key, deleted, timeout_s=READ_TIMEOUT_S)
    log = asyncio.run(read_log(deployment.kafka_bootstrap, deployment.topic("events")))[key]
    assert [record.offset for record in log] == [*offsets, deleted]
    assert is_deletion(log[-1].envelope.event)

    # The same event id as a deleted one is a new event now, not a stored copy.
    again = client.append(key, text_event("q1", "inv1", 101.0, "old one"))
    fresh = client.append(key, text_event("q3", "inv3", 103.0, "new"))
    assert again > deleted
    assert _texts(client, key, fresh) == ["old one", "new"]


def test_deleting_a_session_without_records_is_no_error(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    deleted = client.delete_session(key)
    with pytest.raises(SessionNotFoundError, match="deleted"):
        client.context(key, min_offset=deleted, timeout_s=READ_TIMEOUT_S)
    assert client.delete_session(key) > deleted  # deleting again: another record, no error


def test_a_bad_key_is_refused_before_anything_is_sent(client: SyncClient) -> None:
    with pytest.raises(InvalidArgumentError, match="session_key"):
        client.delete_session("acme/../u1/s1")


def test_the_delete_command_prints_the_deletion_offset(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    offset = client.append(key, text_event("q1", "inv1", 101.0, "question"))
    done = ctxstream_command(deployment, "delete", key)
    assert done.returncode == 0, done.stderr
    log = asyncio.run(read_log(deployment.kafka_bootstrap, deployment.topic("events")))[key]
    assert [record.offset for record in log] == [offset, int(done.stdout)]
    assert done.stdout == f"{log[-1].offset}\n"
    assert is_deletion(log[-1].envelope.event)
    with pytest.raises(SessionNotFoundError, match="deleted"):
        client.context(key, min_offset=log[-1].offset, timeout_s=READ_TIMEOUT_S)

    refused = ctxstream_command(deployment, "delete", "acme/../u1/s1")
    assert refused.returncode == 2
    assert len(refused.stderr.splitlines()) == 1
    assert "session_key" in refused.stderr


def test_a_subscriber_sees_the_deletion_then_the_fresh_start(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    # Each step read back before the next, so that each is a batch of its own.
    first = client.append(key, text_event("q1", "inv1", 101.0, "old"))
    assert _texts(client, key, first) == ["old"]
    deleted = client.delete_session(key)
    with pytest.raises(SessionNotFoundError):
        client.context(key, min_offset=deleted, timeout_s=READ_TIMEOUT_S)
    fresh = client.append(key, text_event("q2", "inv2", 102.0, "new"))
    assert _texts(client, key, fresh) == ["new"]

    def _through_fresh(seen: list[Subscribed]) -> bool:
        return any(
            item.snapshot is not None and item.snapshot.last_offset == fresh for item in seen
        )

    subscriber = Client(settings=deployment)  # subscribing needs no producer
    items = asyncio.run(
        collect(subscriber.subscribe("acme", sessions=[key], from_offset=0), _through_fresh)
    )
    seen = [
        ("deleted", item.deleted)
        if item.snapshot is None
        else ("snapshot", item.snapshot.last_offset)
        for item in items
    ]
    assert seen == [("snapshot", first), ("deleted", key), ("snapshot", fresh)]
    line = orjson.loads(items[1].to_json())
    assert line == {"partition": items[1].partition, "offset": items[1].offset, "deleted": key}
