"""A read of a session with no records is refused as not found, not answered as empty.

Against a real native worker process (the package's ``deployment``): every
per-session read of the client (context, with ``agent``, ``min_offset`` or
``as_of``; projection; expand; rewind) and of the ``context`` command; a fork
of such a session keeps its own refusal.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ctxstream import InvalidArgumentError, SessionNotFoundError, SyncClient
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import text_event
from tests.support.http_api import ctxstream_command

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0  # one batch of a worker sharing two cores with the test


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


def _neighbour(key: SessionKey, partitions: int) -> SessionKey:
    """A new session key on `key`'s partition (so an offset of `key` is one of its partition's)."""
    while True:
        other = _session_key()
        if session_partition(other.encode(), partitions) == session_partition(
            key.encode(), partitions
        ):
            return other


def _missing_beside_a_written_session(
    deployment: ProjectorSettings, client: SyncClient
) -> tuple[int, SessionKey]:
    """A record's offset, folded, and a session without records on its partition."""
    written = _session_key()
    offset = client.append(written, text_event("e1", "inv1", 1.0, "question"))
    assert len(client.context(written, min_offset=offset, timeout_s=READ_TIMEOUT_S)) == 1
    return offset, _neighbour(written, deployment.events_partitions)


def test_every_read_of_a_session_without_records_raises_session_not_found(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    offset, missing = _missing_beside_a_written_session(deployment, client)
    reads: list[Callable[[], object]] = [
        lambda: client.context(missing, timeout_s=READ_TIMEOUT_S),
        lambda: client.context(missing, agent="root", timeout_s=READ_TIMEOUT_S),
        lambda: client.context(missing, min_offset=offset, timeout_s=READ_TIMEOUT_S),
        lambda: client.context_as_of(missing, offset, timeout_s=READ_TIMEOUT_S),
        lambda: client.projection(missing, offset, timeout_s=READ_TIMEOUT_S),
        lambda: client.expand(missing, "summary-1", timeout_s=READ_TIMEOUT_S),
        lambda: client.rewind(missing, "inv1", timeout_s=READ_TIMEOUT_S),
    ]
    for read in reads:
        with pytest.raises(SessionNotFoundError, match="has no records") as refused:
            read()
        assert refused.value.session_key == missing
        assert isinstance(refused.value, LookupError)


def test_as_of_before_a_sessions_first_record_is_not_found_and_after_it_is_read(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    first = _session_key()
    before = client.append(first, text_event("e1", "inv1", 1.0, "earlier"))
    later = _neighbour(first, deployment.events_partitions)
    offset = client.append(later, text_event("e1", "inv1", 2.0, "question"))
    assert offset > before
    # Folded first: the session has records now, none of them up to `before`.
    client.context(later, min_offset=offset, timeout_s=READ_TIMEOUT_S)
    with pytest.raises(SessionNotFoundError, match=f"no records up to offset {before}"):
        client.context_as_of(later, before, timeout_s=READ_TIMEOUT_S)
    assert len(client.context_as_of(later, offset, timeout_s=READ_TIMEOUT_S)) == 1


def test_a_fork_of_a_session_without_records_keeps_its_invalid_argument(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    offset, missing = _missing_beside_a_written_session(deployment, client)
    with pytest.raises(InvalidArgumentError, match="has no records to fork"):
        client.fork(missing, offset, _session_key(), timeout_s=READ_TIMEOUT_S)


def test_the_context_command_says_a_session_is_not_found_in_one_line(
    deployment: ProjectorSettings,
) -> None:
    result = ctxstream_command(deployment, "context", _session_key(), "--timeout-s", "30")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("ctxstream context: read of session ")
    assert "has no records" in result.stderr
