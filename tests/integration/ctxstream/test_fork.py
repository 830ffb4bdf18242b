"""``Client.fork``, its HTTP route and its command, on the real broker, worker and summarizer.

The oracle is the session the fork stands for, written out: the source's
records up to the fork's offset, then the fork's own, rebuilt by the
separately written :func:`~projections.fold.rebuild.rebuild_contents`. The log
shows that nothing is copied (the fork holds one fork record and its own
events), and a compaction of the fork that reaches back into what it
inherited is summarized by the real summarizer worker, which reads those
events from the source's partition.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from ctxstream import InvalidArgumentError, SyncClient
from projections.contents.contents_request import ContentsRequest
from projections.event_kinds import summary_request_id
from projections.fold.fork import fork_source
from projections.fold.rebuild import rebuild_contents
from schemas.event import Event
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import text_event
from tests.support.http_api import ctxstream_command
from tests.support.kafka import WorkerProcess, read_log, requests_on, worker_env
from tests.support.read_worker import VIEW_AGENT

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0
SUMMARY_TIMEOUT_S = 90.0
VIEW = ContentsRequest(agent_name=VIEW_AGENT)


@pytest.fixture(scope="module")
def summarizer(deployment: ProjectorSettings) -> Iterator[WorkerProcess]:
    """The real summarizer worker of the module's deployment, as a process."""
    env = worker_env(
        deployment.kafka_bootstrap, deployment.topic_prefix, unique_topic("fork-summarizer")
    )
    worker = WorkerProcess(env, deployment.data_dir / "summarizer.log")
    loop = asyncio.new_event_loop()  # the child process is watched from the loop that started it
    loop.run_until_complete(worker.start())
    try:
        yield worker
    finally:
        loop.run_until_complete(worker.stop())
        loop.close()


def _keys() -> tuple[SessionKey, SessionKey]:
    user = unique_topic("u")
    return SessionKey(f"acme/support/{user}/source"), SessionKey(f"acme/support/{user}/fork")


def _log(deployment: ProjectorSettings) -> dict[SessionKey, list[LoggedEvent]]:
    return asyncio.run(read_log(deployment.kafka_bootstrap, deployment.topic("events")))


def _invocation(number: int) -> list[Event]:
    """Invocation `number`: a question ``q<n>`` and the view agent's answer ``a<n>``."""
    inv, clock = f"inv{number}", 100.0 + 10 * number
    return [
        text_event(f"q{number}", inv, clock, f"q{number}"),
        text_event(f"a{number}", inv, clock + 1, f"answer {number}", author=VIEW_AGENT),
    ]


def _line(
    log: dict[SessionKey, list[LoggedEvent]], source: SessionKey, fork: SessionKey, at: int
) -> list[LoggedEvent]:
    """The fork's history written out: the source's records up to `at`, then the fork's own.

    Numbered anew, in that order (the fork's offsets may lie below the source's).
    """
    own = [record for record in log[fork] if fork_source(record.envelope) is None]
    line = [*(record for record in log[source] if record.offset <= at), *own]
    return [LoggedEvent(Offset(number), record.envelope) for number, record in enumerate(line)]


def test_a_fork_shares_the_history_up_to_its_offset_and_diverges_after(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    source, fork = _keys()
    offsets = client.append_many(source, [*_invocation(1), *_invocation(2)])
    at = offsets[1]  # the fork keeps invocation 1 only
    fork_offset = client.fork(source, at, fork, timeout_s=READ_TIMEOUT_S)
    own = client.append_many(fork, _invocation(7))
    later = client.append_many(source, _invocation(3))

    fork_contents = client.context(fork, min_offset=own[-1], timeout_s=READ_TIMEOUT_S)
    source_contents = client.context(source, min_offset=later[-1], timeout_s=READ_TIMEOUT_S)
    log = _log(deployment)
    assert [record.offset for record in log[fork]] == [fork_offset, *own]  # nothing copied
    named = fork_source(log[fork][0].envelope)
    assert named is not None
    assert (named.session_key, named.offset) == (source, at)
    assert fork_contents == rebuild_contents(_line(log, source, fork, at), VIEW)
    assert source_contents == rebuild_contents(log[source], VIEW)
    texts = [part.text for content in fork_contents for part in content.parts or ()]
    assert texts == ["q1", "answer 1", "q7", "answer 7"]
    snapshot = client.projection(fork, own[-1], timeout_s=READ_TIMEOUT_S)
    assert snapshot.last_offset == own[-1]
    assert snapshot.invocations_total == 2
    assert client.context_as_of(fork, fork_offset, timeout_s=READ_TIMEOUT_S) == rebuild_contents(
        _line(log, source, fork, at)[:2], VIEW
    )


def test_a_compaction_of_the_fork_summarizes_what_it_inherited(
    deployment: ProjectorSettings, client: SyncClient, summarizer: WorkerProcess
) -> None:
    source, fork = _keys()
    offsets = client.append_many(source, [*_invocation(1), *_invocation(2)])
    client.fork(source, offsets[-1], fork, timeout_s=READ_TIMEOUT_S)
    # Three invocations since the start: the first event of the fourth decides a
    # sliding window over inv1 and inv2 (the source's) and inv3 (the fork's own).
    own = client.append_many(fork, [*_invocation(3), *_invocation(4)])

    deadline = time.monotonic() + SUMMARY_TIMEOUT_S
    while True:
        snapshot = client.projection(fork, own[-1], timeout_s=READ_TIMEOUT_S)
        if snapshot.boundary is not None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert snapshot.boundary is not None, summarizer.log_path.read_text()[-3000:]

    log = _log(deployment)
    requests = [
        request
        for request in asyncio.run(
            requests_on(deployment.kafka_bootstrap, deployment.topic("compaction-requests"))
        )
        if request.session_key == fork
    ]
    assert len(requests) == 1
    request = requests[0]
    assert request.event_ids == ("q1", "a1", "q2", "a2", "q3", "a3")
    assert [(e.session_key, e.origin_offset) for e in request.inherited] == [
        (source, offset) for offset in offsets
    ]
    summaries = [r for r in log[fork] if summary_request_id(r.envelope.event) is not None]
    assert [summary_request_id(r.envelope.event) for r in summaries] == [request.request_id]
    assert snapshot.boundary.summary_event_id == summaries[0].envelope.event.id
    assert [r.offset for r in log[source]] == offsets  # the source gained nothing
    contents = client.context(fork, min_offset=summaries[0].offset, timeout_s=READ_TIMEOUT_S)
    assert contents == rebuild_contents(_line(log, source, fork, offsets[-1]), VIEW)


def _empty_neighbour(deployment: ProjectorSettings, key: SessionKey) -> SessionKey:
    """A session without records on `key`'s partition, whose offsets the worker has folded."""
    home = session_partition(key.encode(), deployment.events_partitions)
    for number in range(10_000):
        neighbour = SessionKey(f"{key}-none{number}")
        if session_partition(neighbour.encode(), deployment.events_partitions) == home:
            return neighbour
    raise AssertionError("no key found on the partition")


def test_refused_forks_append_nothing(deployment: ProjectorSettings, client: SyncClient) -> None:
    source, fork = _keys()
    offset = client.append(source, _invocation(1)[0])
    taken = client.append(fork, _invocation(2)[0])
    client.projection(fork, taken, timeout_s=READ_TIMEOUT_S)  # the check sees folded records
    with pytest.raises(InvalidArgumentError, match=r"^new_session_key: .* has records already"):
        client.fork(source, offset, fork, timeout_s=READ_TIMEOUT_S)
    with pytest.raises(InvalidArgumentError, match=r"^new_session_key: a fork stays"):
        client.fork(source, offset, "globex/support/u1/s1")
    with pytest.raises(InvalidArgumentError, match=r"^new_session_key: the fork needs"):
        client.fork(source, offset, source)
    with pytest.raises(InvalidArgumentError, match=r"^at_offset: -1 is not a Kafka offset"):
        client.fork(source, -1, SessionKey(f"{fork}-2"))
    with pytest.raises(InvalidArgumentError, match=r"^session_key: .* has no records"):
        client.fork(_empty_neighbour(deployment, source), offset, SessionKey(f"{fork}-3"))
    log = _log(deployment)
    assert [r.offset for r in log[source]] == [offset]
    assert [r.offset for r in log[fork]] == [taken]
    assert SessionKey(f"{fork}-3") not in log


def test_the_fork_command_prints_the_offset_and_fails_in_one_line(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    source, fork = _keys()
    offsets = client.append_many(source, _invocation(1))
    done = ctxstream_command(deployment, "fork", source, str(offsets[-1]), fork)
    assert done.returncode == 0, done.stderr
    log = _log(deployment)
    assert done.stdout == f"{log[fork][0].offset}\n"
    contents = client.context(fork, min_offset=log[fork][0].offset, timeout_s=READ_TIMEOUT_S)
    assert contents == rebuild_contents(log[source], VIEW)

    again = ctxstream_command(deployment, "fork", source, str(offsets[-1]), fork)
    assert (again.returncode, again.stdout) == (2, "")
    assert len(again.stderr.splitlines()) == 1
    assert "has records already" in again.stderr
    other = ctxstream_command(deployment, "fork", source, "0", "globex/support/u1/s1")
    assert other.returncode == 2
    assert len(other.stderr.splitlines()) == 1
    assert len(_log(deployment)[fork]) == 1  # nothing more was appended
