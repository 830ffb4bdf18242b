"""Who compacts, on the real broker: a running projector (``ctxstream worker``) and summarizer.

Two apps of one deployment get the same traffic: invocations with a tool
call, and the compaction events ADK's runner appends after every second one
when its App carries a sliding window, each step appended once the pipeline
answered what came before, as a Runner's turns come (streams/README.md,
"Who compacts", says why). ``acme/both`` is owned by the pipeline: it still
compacts it, each window summarized exactly once, and ADK's events are
counted in ``ctxstream_projector_conflicting_summaries_total{entry="acme/both"}``
and logged once each with their session and offset. ``acme/adk`` is owned by
ADK: no request is ever published for it, and nothing is counted.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Final

import pytest
from aiokafka.structs import ConsumerRecord

from projections.event_kinds import is_summary, summary_request_id
from schemas.codec import decode_compaction_request
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey
from tests.conftest import free_ports, unique_topic
from tests.support.events import call_event, envelope, response_event, summary_event, text_event
from tests.support.kafka import (
    ENGINES,
    WorkerProcess,
    append_envelopes,
    clean_fold,
    committed_offsets,
    create_deployment_topics,
    projector_settings,
    read_log,
    read_topic,
    start_worker,
    stop_worker,
    summaries_by_request,
    worker_env,
)

pytestmark = pytest.mark.integration

BOTH: Final = "acme/both"  # pipeline-owned, and ADK authors compaction events
ADK: Final = "acme/adk"  # ADK-owned
SESSIONS_PER_APP: Final = 2
INVOCATIONS: Final = 6
ADK_EVERY: Final = 2  # ADK's compaction_interval: a summary after every second invocation
SETTLE_TIMEOUT_S: Final = 120.0
POLL_S: Final = 0.5
CLOCK: Final = 1_764_480_000.0


def _invocation(session: int, number: int) -> list[Event]:
    """User question, a tool call and its response, the agent's answer."""
    inv, base = f"s{session}-inv{number}", CLOCK + session * 1_000 + number * 10
    call_id = f"c{session}-{number}"
    return [
        text_event(f"{inv}-q", inv, base, f"question {number}"),
        call_event(f"{inv}-c", inv, base + 1, call_id, name="lookup", author="helper"),
        response_event(f"{inv}-r", inv, base + 2, call_id, name="lookup", author="helper"),
        text_event(f"{inv}-a", inv, base + 3, f"answer {number}", author="helper"),
    ]


def _adk_summary(session: int, number: int) -> Event:
    """What ADK's sliding window appends after invocation `number`: the last ADK_EVERY ones."""
    first = number - ADK_EVERY + 1
    start = CLOCK + session * 1_000 + first * 10
    end = CLOCK + session * 1_000 + number * 10 + 3
    return summary_event(f"s{session}-adk{number}", start, end, end + 0.5, text="adk summary")


def _key(app: str, session: int) -> SessionKey:
    return SessionKey(f"{app}/u{session}/s{session}")


def _turns(app: str) -> list[list[Envelope]]:
    """The traffic as a Runner writes it: an invocation of every session, then ADK's summaries."""
    steps: list[list[Envelope]] = []
    for number in range(1, INVOCATIONS + 1):
        sessions = range(SESSIONS_PER_APP)
        steps.append([envelope(_key(app, s), e) for s in sessions for e in _invocation(s, number)])
        if number % ADK_EVERY == 0:
            steps.append([envelope(_key(app, s), _adk_summary(s, number)) for s in sessions])
    return steps


def _conflicts_counted(metrics_port: int) -> dict[str, float]:
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    prefix = 'ctxstream_projector_conflicting_summaries_total{entry="'
    counted: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            entry, value = line[len(prefix) :].split('"} ')
            counted[entry] = float(value)
    return counted


async def _settled(
    bootstrap: str, names: dict[str, str], projector_group: str, summarizer_group: str
) -> list[ConsumerRecord]:
    """The `events` records once every request is answered and both groups consumed all."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        projector_done = await committed_offsets(bootstrap, projector_group, names["events"])
        summarizer_done = await committed_offsets(bootstrap, summarizer_group)
        events = await read_topic(
            bootstrap, names["events"], partitions=4, until=lambda _: True, timeout_s=60.0
        )
        asked = await read_topic(
            bootstrap, names["requests"], partitions=2, until=lambda _: True, timeout_s=60.0
        )
        request_ids = {decode_compaction_request(r.value).request_id for r in asked}
        if (
            request_ids <= summaries_by_request(events).keys()
            and all(projector_done.get(r.partition, -1) > r.offset for r in events)
            and all(summarizer_done.get(r.partition, -1) > r.offset for r in asked)
        ):
            return events
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"the pipeline did not settle in {SETTLE_TIMEOUT_S}s")


@pytest.mark.parametrize("engine", ENGINES)
async def test_ownership_decides_who_compacts_and_conflicts_are_counted(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    prefix = unique_topic("owner")
    (metrics_port,) = free_ports(1)
    settings = projector_settings(
        kafka_bootstrap,
        prefix,
        engine=engine,
        data_dir=tmp_path / "projector",
        metrics_port=metrics_port,
        batch_within_s=0.05,
        compaction_overrides={
            BOTH: {"compaction_interval": 1, "overlap_size": 0},
            ADK: {"owner": "adk"},
        },
    )
    await create_deployment_topics(settings)
    names = {"events": settings.topic("events"), "requests": settings.topic("compaction-requests")}
    group = unique_topic("summarizer")
    summarizer = WorkerProcess(worker_env(kafka_bootstrap, prefix, group), tmp_path / "sum.log")
    log_path = tmp_path / "projector.log"
    projector = start_worker(settings, log_path)
    await summarizer.start()
    try:
        adk_owned = [record for step in _turns(ADK) for record in step]
        await append_envelopes(kafka_bootstrap, names["events"], adk_owned)
        for step in _turns(BOTH):  # each step once the pipeline answered what came before
            await append_envelopes(kafka_bootstrap, names["events"], step)
            records = await _settled(kafka_bootstrap, names, settings.app_id, group)
        counted = _conflicts_counted(metrics_port)
    finally:
        stop_worker(projector)
        await summarizer.stop()

    log = await read_log(kafka_bootstrap, names["events"])
    requests = [decode_compaction_request(r.value) for r in await _requests(kafka_bootstrap, names)]
    by_app = Counter(key.rsplit("/", 2)[0] for key in (r.session_key for r in requests))
    # ADK's app: not one request; the pipeline's: some, each summarized exactly once.
    assert by_app[ADK] == 0
    assert by_app[BOTH] >= SESSIONS_PER_APP
    summaries = summaries_by_request(records)
    assert {r.request_id: len(summaries.get(r.request_id, [])) for r in requests} == {
        r.request_id: 1 for r in requests
    }
    windows = Counter((r.session_key, r.start_timestamp, r.end_timestamp) for r in requests)
    assert max(windows.values()) == 1  # one pipeline summary per window
    decided = {r.request_id for _, reqs in clean_fold(settings, log).values() for r in reqs}
    assert decided == {r.request_id for r in requests}

    # ADK's compaction events: counted on the pipeline's app only, logged once each.
    adk_summaries = {
        (key, logged.offset)
        for key, logged_events in log.items()
        for logged in logged_events
        if is_summary(logged.envelope.event) and summary_request_id(logged.envelope.event) is None
    }
    on_both = sorted((k, o) for k, o in adk_summaries if k.startswith(f"{BOTH}/"))
    assert len(on_both) == SESSIONS_PER_APP * (INVOCATIONS // ADK_EVERY)
    assert counted == {BOTH: float(len(on_both))}
    lines = [line for line in log_path.read_text().splitlines() if "ADK authored" in line]
    expected = [f"session={key} offset={offset}:" for key, offset in on_both]
    assert sorted(e for e in expected for line in lines if e in line) == sorted(expected)
    assert len(lines) == len(on_both)


async def _requests(bootstrap: str, names: dict[str, str]) -> list[ConsumerRecord]:
    return await read_topic(
        bootstrap, names["requests"], partitions=2, until=lambda _: True, timeout_s=60.0
    )
