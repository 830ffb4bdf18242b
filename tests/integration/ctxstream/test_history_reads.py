"""Time travel and expand through ``ctxstream.Client`` and the command line, on a real worker.

One worker process (``python -m ctxstream worker``) serves a deployment of its
own; the client appends sessions and reads them back. The oracles are written
apart from the code under test: a context as of an offset is the plain rebuild
(:func:`projections.fold.rebuild.rebuild_contents`) of the records as appended, cut at
that offset; the events a summary covers are selected here, from the reference's
rules, over the rebuild's effective records: rewinds annul (§3.1), and a summary
covers the raw events whose timestamps lie in its range, both ends included
(§3.2, §3.3).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Final

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from ctxstream import (
    Client,
    InvalidArgumentError,
    SummaryNotFoundError,
    SyncClient,
)
from ctxstream.bench.workload import bench_session
from projections.contents.contents_request import ContentsRequest
from projections.fold.rebuild import effective_records, rebuild_contents
from schemas.event import Content, Event
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.conftest import REPO, unique_topic
from tests.support.events import call_event, logged_event, response_event, summary_event, text_event
from tests.support.next_agent_oracle import expected_view_request
from tests.support.read_worker import VIEW_AGENT, WORKER_LOG
from tests.support.strategies import sessions

pytestmark = pytest.mark.integration

VIEW: Final = ContentsRequest(agent_name=VIEW_AGENT)
OTHER: Final = ContentsRequest(agent_name="helper", current_branch="root.helper")
READ_TIMEOUT_S: Final = 30.0  # one batch of a worker sharing two cores with the test
CLI_TIMEOUT_S: Final = 60.0  # the interpreter's start, the claims' first read, one read
#: How long an as_of read is seen waiting before the record it waits for is appended.
GENERATED: Final = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


def _appended(client: SyncClient, key: SessionKey, events: Sequence[Event]) -> list[LoggedEvent]:
    """`events` appended to session `key` as logged records, once the worker has folded them."""
    offsets = client.append_many(key, events)
    client.context(key, min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    return [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]


@pytest.fixture(scope="module")
def long_session(client: SyncClient) -> tuple[SessionKey, list[LoggedEvent]]:
    """A session of 600 events with rolling summaries: its projection released its start."""
    key = _session_key()
    return key, _appended(client, key, [record.envelope.event for record in bench_session(600)])


def _history_reads(deployment: ProjectorSettings, key: SessionKey) -> int:
    """How many times the worker has read `key`'s history from `events` (its log says)."""
    log = (deployment.data_dir / WORKER_LOG).read_text(encoding="utf-8")
    return log.count(f"session={key} history read:")


# -- the oracle of expand ---------------------------------------------------------------------


def _live(records: Sequence[LoggedEvent]) -> list[LoggedEvent]:
    """The records rewinds leave (§3.1).

    The newest rewind acts first: a rewind to invocation X annuls the records
    from X's first record up to itself when X first appears before it, else
    only itself; a rewind inside a span a newer one annulled does nothing.
    """
    first: dict[str, int] = {}
    for position, record in enumerate(records):
        first.setdefault(record.envelope.event.invocation_id, position)
    annulled: set[int] = set()
    for position in reversed(range(len(records))):
        target = records[position].envelope.event.actions.rewind_before_invocation_id
        if position in annulled or not target:
            continue
        start = first.get(target, position)
        annulled.update(range(min(start, position), position + 1))
    return [record for position, record in enumerate(records) if position not in annulled]


def _live_summaries(live: Sequence[LoggedEvent]) -> dict[str, Event]:
    """The live summary events by id (of two with one id, the later)."""
    return {
        record.envelope.event.id: record.envelope.event
        for record in live
        if record.envelope.event.actions.compaction is not None
    }


def _covered(summary: Event, live: Sequence[LoggedEvent]) -> list[Event]:
    """The live raw events whose timestamps lie in `summary`'s range, ends included, in order."""
    compaction = summary.actions.compaction
    assert compaction is not None
    start, end = compaction.start_timestamp, compaction.end_timestamp
    events = [record.envelope.event for record in live]
    return [e for e in events if e.actions.compaction is None and start <= e.timestamp <= end]


def _expanded(client: SyncClient, key: SessionKey, summary_id: str, page_size: int) -> list[Event]:
    """Every page of `summary_id`'s expansion, checked page by page, joined."""
    events: list[Event] = []
    token: str | None = None
    while True:
        page = client.expand(
            key, summary_id, page_size=page_size, page_token=token, timeout_s=READ_TIMEOUT_S
        )
        assert (page.session_key, page.summary_id) == (key, summary_id)
        events.extend(page.events)
        token = page.next_page_token
        if token is None:
            assert len(page.events) <= page_size
            return events
        assert len(page.events) == page_size  # only the last page is short


# -- time travel ------------------------------------------------------------------------------


@GENERATED
@given(log=sessions(max_invocations=6))
def test_as_of_every_offset_equals_the_rebuild_of_the_log_up_to_it(
    client: SyncClient, log: list[LoggedEvent]
) -> None:
    key = _session_key()
    appended = _appended(client, key, [record.envelope.event for record in log])
    # From the session's first record: before it the session has none (session-not-found).
    for offset in range(appended[0].offset, appended[-1].offset + 1):
        upto = [record for record in appended if record.offset <= offset]
        as_viewed = client.context_as_of(key, offset, timeout_s=READ_TIMEOUT_S)
        view = expected_view_request(upto, VIEW)  # the agent the router runs next, then
        assert as_viewed == rebuild_contents(upto, view), f"view at offset {offset}"
        as_other = client.context_as_of(
            key,
            offset,
            agent=OTHER.agent_name,
            branch=OTHER.current_branch,
            timeout_s=READ_TIMEOUT_S,
        )
        assert as_other == rebuild_contents(upto, OTHER), f"{OTHER.agent_name} at offset {offset}"


def test_as_of_a_long_session_whose_projection_released_its_start_reads_its_history(
    deployment: ProjectorSettings,
    client: SyncClient,
    long_session: tuple[SessionKey, list[LoggedEvent]],
) -> None:
    key, appended = long_session
    before = _history_reads(deployment, key)
    for index in (0, 7, 60, 250):
        offset = appended[index].offset
        upto = appended[: index + 1]
        assert client.context_as_of(key, offset, timeout_s=READ_TIMEOUT_S) == (
            rebuild_contents(upto, expected_view_request(upto, VIEW))
        ), index
        other = client.context_as_of(key, offset, agent="someone-else", timeout_s=READ_TIMEOUT_S)
        assert other == rebuild_contents(upto, ContentsRequest(agent_name="someone-else")), index
    assert _history_reads(deployment, key) > before  # released: answered from `events`
    now = client.context_as_of(key, appended[-1].offset, timeout_s=READ_TIMEOUT_S)
    expected = rebuild_contents(appended, expected_view_request(appended, VIEW))
    assert now == client.context(key, timeout_s=READ_TIMEOUT_S) == expected


def test_an_as_of_beyond_the_partitions_end_is_refused_at_once(client: SyncClient) -> None:
    key = _session_key()
    offset = client.append(key, text_event("e1", "inv1", 101.0, "question"))
    assert len(client.context_as_of(key, offset, timeout_s=READ_TIMEOUT_S)) == 1
    beyond = offset + 1_000
    started = time.monotonic()
    with pytest.raises(InvalidArgumentError, match=f"offset {beyond} has been written") as refused:
        client.context_as_of(key, beyond, timeout_s=READ_TIMEOUT_S)
    assert time.monotonic() - started < READ_TIMEOUT_S  # at once, not after waiting for it
    assert not refused.value.retriable


async def test_an_as_of_read_of_a_written_offset_answers_once_it_is_folded(
    deployment: ProjectorSettings,
) -> None:
    key = _session_key()
    first_event = text_event("e1", "inv1", 101.0, "question")
    second_event = text_event("e2", "inv1", 102.0, "answer", author=VIEW_AGENT)
    async with Client(settings=deployment) as client:
        first = await client.append(key, first_event)
        await client.context(key, min_offset=first, timeout_s=READ_TIMEOUT_S)
        # Nothing else appends to this deployment meanwhile: the next record is the next offset,
        # which is refused until it is written ...
        with pytest.raises(InvalidArgumentError):
            await client.context_as_of(key, first + 1, timeout_s=READ_TIMEOUT_S)
        second = await client.append(key, second_event)
        # ... and read as soon as it is, the worker waiting until it has folded it.
        contents = await client.context_as_of(key, second, timeout_s=READ_TIMEOUT_S)
    appended = [logged_event(key, first_event, first), logged_event(key, second_event, second)]
    assert second == first + 1
    assert contents == rebuild_contents(appended, VIEW)
    assert len(contents) == 2


# -- expand -----------------------------------------------------------------------------------


@GENERATED
@given(log=sessions(max_invocations=6))
def test_expand_of_each_summary_pages_through_the_live_raw_events_of_its_range(
    client: SyncClient, log: list[LoggedEvent]
) -> None:
    key = _session_key()
    appended = _appended(client, key, [record.envelope.event for record in log])
    live = _live(effective_records(appended))
    summaries = _live_summaries(live)
    for summary_id, summary in summaries.items():
        expected = _covered(summary, live)
        assert _expanded(client, key, summary_id, page_size=100) == expected, summary_id
        assert _expanded(client, key, summary_id, page_size=2) == expected, summary_id
    for record in appended:
        event = record.envelope.event
        if event.actions.compaction is not None and event.id not in summaries:
            with pytest.raises(SummaryNotFoundError):  # a summary a rewind annulled
                client.expand(key, event.id, timeout_s=READ_TIMEOUT_S)


def test_expand_of_a_long_sessions_summaries_reads_what_its_projection_released(
    deployment: ProjectorSettings,
    client: SyncClient,
    long_session: tuple[SessionKey, list[LoggedEvent]],
) -> None:
    key, appended = long_session
    live = _live(effective_records(appended))
    summaries = list(_live_summaries(live).items())
    assert len(summaries) > 3
    before = _history_reads(deployment, key)
    for summary_id, summary in (summaries[0], summaries[len(summaries) // 2], summaries[-1]):
        expected = _covered(summary, live)
        assert expected
        assert _expanded(client, key, summary_id, page_size=25) == expected, summary_id
    assert _history_reads(deployment, key) > before  # the first summary's events were released


def test_expand_of_no_summary_raises_a_clear_error(client: SyncClient) -> None:
    key = _session_key()
    appended = _appended(client, key, _order_session())
    page = client.expand(key, "s1", timeout_s=READ_TIMEOUT_S)
    assert [event.id for event in page.events] == ["q1", "c1", "r1", "a1"]
    assert page.next_page_token is None
    assert page.last_offset == appended[-1].offset
    with pytest.raises(SummaryNotFoundError, match="has no live event 'nope'") as unknown:
        client.expand(key, "nope", timeout_s=READ_TIMEOUT_S)
    assert isinstance(unknown.value, LookupError)
    assert unknown.value.summary_event_id == "nope"
    assert not unknown.value.retriable
    with pytest.raises(SummaryNotFoundError, match="event 'q1' is not a summary"):
        client.expand(key, "q1", timeout_s=READ_TIMEOUT_S)


# -- the command line ---------------------------------------------------------------------------


def _order_session() -> list[Event]:
    """An order question, a tool call and its answer, a summary of them, and a thank-you."""
    return [
        text_event("q1", "inv1", 100.0, "Where is my order?"),
        call_event("c1", "inv1", 101.0, "call-1", name="lookup", author=VIEW_AGENT),
        response_event("r1", "inv1", 102.0, "call-1", name="lookup", author=VIEW_AGENT),
        text_event("a1", "inv1", 103.0, "It shipped.", author=VIEW_AGENT),
        summary_event("s1", 100.0, 103.0, 104.0, "Order 42 shipped."),
        text_event("q2", "inv2", 105.0, "Thanks!"),
    ]


def _ctxstream(deployment: ProjectorSettings, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CTXSTREAM_KAFKA_BOOTSTRAP": deployment.kafka_bootstrap,
        "CTXSTREAM_TOPIC_PREFIX": deployment.topic_prefix,
    }
    return subprocess.run(
        [sys.executable, "-m", "ctxstream", *arguments],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )


def _contents(stdout: str) -> list[Content]:
    return [Content.model_validate(item) for item in orjson.loads(stdout)]


def test_the_context_command_prints_what_the_client_reads(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    appended = _appended(client, key, _order_session())
    answered = _ctxstream(deployment, "context", key)
    assert (answered.returncode, answered.stderr) == (0, "")
    assert answered.stdout == "[1] model\n    Order 42 shipped.\n[2] user\n    Thanks!\n"

    as_json = _ctxstream(deployment, "context", key, "--json", "--agent", "helper")
    assert as_json.returncode == 0, as_json.stderr
    assert _contents(as_json.stdout) == client.context(key, agent="helper")

    called = appended[2].offset  # right after the tool's answer, before the summary
    travelled = _ctxstream(deployment, "context", key, "--as-of", str(called), "--json")
    assert travelled.returncode == 0, travelled.stderr
    assert _contents(travelled.stdout) == client.context_as_of(key, called)
    assert _contents(travelled.stdout) == rebuild_contents(appended[:3], VIEW)
    as_text = _ctxstream(deployment, "context", key, "--as-of", str(called))
    assert as_text.stdout == (
        "[1] user\n"
        "    Where is my order?\n"
        "[2] model\n"
        "    call lookup {}\n"
        "[3] user\n"
        '    response lookup {"ok":1}\n'
    )


def test_the_expand_command_prints_every_page_of_what_the_client_reads(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    appended = _appended(client, key, _order_session())
    covered = [record.envelope.event for record in appended[:4]]
    as_json = _ctxstream(deployment, "expand", key, "s1", "--page-size", "1", "--json")
    assert (as_json.returncode, as_json.stderr) == (0, "")
    lines = as_json.stdout.splitlines()
    assert [Event.model_validate(orjson.loads(line)) for line in lines] == covered
    assert covered == client.expand(key, "s1").events

    as_text = _ctxstream(deployment, "expand", key, "s1", "--page-size", "3")
    headings = [line for line in as_text.stdout.splitlines() if not line.startswith(" ")]
    assert headings == [
        "@100.0 user invocation=inv1 id=q1",
        "@101.0 root invocation=inv1 id=c1",
        "@102.0 root invocation=inv1 id=r1",
        "@103.0 root invocation=inv1 id=a1",
    ]
    assert "    Where is my order?" in as_text.stdout.splitlines()


@pytest.mark.parametrize(
    ("arguments", "status", "said"),
    [
        (("expand", "{key}", "nope"), 1, "has no live event 'nope'"),
        (("expand", "{key}", "q1"), 1, "event 'q1' is not a summary"),
        (("expand", "{key}", "s1", "--page-size", "0"), 2, "page_size:"),
        (("context", "{key}", "--as-of", "-1"), 2, "offset:"),
        (("context", "{key}", "--as-of", "9999999", "--timeout-s", "1"), 2, "offset 9999999"),
        (("context", "acme/support/../s1"), 2, "session_key:"),
    ],
)
def test_a_command_that_fails_says_why_in_one_line_and_exits_non_zero(
    deployment: ProjectorSettings,
    client: SyncClient,
    arguments: tuple[str, ...],
    status: int,
    said: str,
) -> None:
    key = _session_key()
    _appended(client, key, _order_session())
    failed = _ctxstream(deployment, *(argument.format(key=key) for argument in arguments))
    assert failed.returncode == status
    assert failed.stdout == ""
    assert failed.stderr.count("\n") == 1, failed.stderr
    assert failed.stderr.startswith(f"ctxstream {arguments[0]}: ")
    assert said in failed.stderr
