"""Heavy reads never stall the fold: probes P5 and P3 of the security review, on a real worker.

One worker process (``python -m ctxstream worker``) serves a deployment of
this module's own. A long session (some tens of thousands of records) sits on
one `events` partition; a quiet session of another partition appends and
reads its writes while ten ``as_of`` reads of the long one run. The worker
answers those in threads within its heavy-read budget (``CTXSTREAM_HEAVY_READS``),
so the quiet session's round trips go on; reads past the budget wait for a
slot within their own timeout, then are refused as busy (``OverBudgetError``);
an ``as_of`` read whose client went away stops its thread (the worker logs
``heavy read stopped``). A fork of a session on the long session's partition
reads its source from the source's first offset, not from offset 0; a worker
whose history reads cannot finish in time quarantines the fork's session and
folds on.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import aiohttp
import pytest

from ctxstream import Client, SyncClient
from ctxstream.errors import OverBudgetError, SessionNotFoundError
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from schemas.read_protocol import read_path
from schemas.read_secret import read_keys
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import text_event
from tests.support.kafka import wait_for
from tests.support.read_worker import VIEW_AGENT, WORKER_LOG, claims, serving_worker

pytestmark = pytest.mark.integration

#: Records of the long session: its as_of refold is O(these).
LONG_RECORDS: Final = 30_000
APPEND_CHUNK: Final = 2_000
#: Concurrent as_of reads of the long session (the probe's ten).
HEAVY_READS: Final = 10
#: The worker's heavy-read budget in these tests.
BUDGET: Final = 2
#: The quiet session's own read timeout: each of its round trips must be answered within it.
QUIET_TIMEOUT_S: Final = 5.0
#: Quiet round trips that must complete while the heavy reads run.
QUIET_ROUND_TRIPS: Final = 5
HEAVY_TIMEOUT_S: Final = 240.0
#: How long the reads past the budget wait for a slot: less than one refold takes.
BUSY_WAIT_S: Final = 2.0
FOLDED_TIMEOUT_S: Final = 120.0
LOG_TIMEOUT_S: Final = 30.0
VIEW_AGENTS: Final = {"acme/support": VIEW_AGENT}


def _keys_on(partitions: int, partition: int, count: int) -> list[SessionKey]:
    """`count` fresh session keys of `partition`."""
    found: list[SessionKey] = []
    while len(found) < count:
        key = SessionKey(f"acme/support/{unique_topic('u')}/s")
        if session_partition(key.encode(), partitions) == partition:
            found.append(key)
    return found


def _log(deployment: ProjectorSettings) -> str:
    return (deployment.data_dir / WORKER_LOG).read_text(encoding="utf-8")


async def _appended_long(deployment: ProjectorSettings, key: SessionKey) -> int:
    """The long session appended and folded; its last offset."""
    async with Client(settings=deployment) as client:
        last = -1
        for start in range(0, LONG_RECORDS, APPEND_CHUNK):
            events = [
                text_event(f"r{i}", f"inv{i // 50}", 1_000 + i)
                for i in range(start, min(start + APPEND_CHUNK, LONG_RECORDS))
            ]
            last = (await client.append_many(key, events))[-1]
        await client.projection(key, last, timeout_s=FOLDED_TIMEOUT_S)
        return last


@pytest.fixture(scope="module")
def heavy_deployment(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProjectorSettings]:
    """A deployment served by one worker whose heavy-read budget is :data:`BUDGET`."""
    folder = tmp_path_factory.mktemp("heavy")
    with serving_worker(
        kafka_bootstrap, folder, "heavy", view_agent_names=VIEW_AGENTS, heavy_reads=BUDGET
    ) as reads:
        yield reads


@pytest.fixture(scope="module")
def long_session(heavy_deployment: ProjectorSettings) -> tuple[SessionKey, int]:
    """The long session, on partition 0, and its last offset."""
    (key,) = _keys_on(heavy_deployment.events_partitions, 0, 1)
    return key, asyncio.run(_appended_long(heavy_deployment, key))


async def _quiet_round_trips(client: Client, key: SessionKey, until: asyncio.Task[object]) -> int:
    """Append plus read-your-writes on `key` until `until` is done; how many completed."""
    done = 0
    while not until.done():
        offset = await client.append(key, text_event(f"q{done}", "q", 5_000 + done))
        await client.context(key, min_offset=offset, timeout_s=QUIET_TIMEOUT_S)
        done += 1
    return done


def test_a_quiet_session_reads_its_writes_while_ten_as_of_reads_run(
    heavy_deployment: ProjectorSettings, long_session: tuple[SessionKey, int]
) -> None:
    long_key, last = long_session
    (quiet,) = _keys_on(heavy_deployment.events_partitions, 1, 1)

    async def run() -> tuple[int, list[object]]:
        async with Client(settings=heavy_deployment) as client:
            with contextlib.suppress(SessionNotFoundError):  # routed, warm; nothing in it yet
                await client.context(quiet, timeout_s=QUIET_TIMEOUT_S)

            async def heavy() -> list[object]:
                reads = [
                    client.context_as_of(long_key, last - 1 - i, timeout_s=HEAVY_TIMEOUT_S)
                    for i in range(HEAVY_READS)
                ]
                return list(await asyncio.gather(*reads, return_exceptions=True))

            heavy_reads = asyncio.create_task(heavy())
            quiet_trips = await _quiet_round_trips(client, quiet, heavy_reads)
            return quiet_trips, await heavy_reads

    quiet_trips, answers = asyncio.run(run())
    # Each of them a context of the long session cut just before its end; none refused.
    assert [type(answer) for answer in answers] == [list] * HEAVY_READS
    assert all(len(answer) > LONG_RECORDS // 2 for answer in answers)  # type: ignore[arg-type]
    # The quiet session was answered within its own timeout every time, again and again.
    assert quiet_trips >= QUIET_ROUND_TRIPS


def test_heavy_reads_past_the_budget_wait_for_a_slot_then_are_refused_as_busy(
    heavy_deployment: ProjectorSettings, long_session: tuple[SessionKey, int]
) -> None:
    long_key, last = long_session

    async def run() -> tuple[list[object], list[object]]:
        async with Client(settings=heavy_deployment) as client:
            await client.projection(long_key, timeout_s=QUIET_TIMEOUT_S)  # routed
            # Two reads with all the time they need take the two slots ...
            holding = [
                asyncio.create_task(
                    client.context_as_of(long_key, last - 1 - i, timeout_s=HEAVY_TIMEOUT_S)
                )
                for i in range(2)
            ]
            await asyncio.sleep(0.5)
            # ... and the others wait for one within their own time.
            waiting = [
                client.context_as_of(long_key, last - 3 - i, timeout_s=BUSY_WAIT_S)
                for i in range(HEAVY_READS - 2)
            ]
            waited: list[object] = list(await asyncio.gather(*waiting, return_exceptions=True))
            held: list[object] = list(await asyncio.gather(*holding, return_exceptions=True))
            return held, waited

    held, outcomes = asyncio.run(run())
    assert [type(answer) for answer in held] == [list, list]  # the slots' reads were answered
    busy = [outcome for outcome in outcomes if isinstance(outcome, OverBudgetError)]
    others = [repr(o)[:300] for o in outcomes if not isinstance(o, OverBudgetError | list)]
    assert not others  # nothing else went wrong
    assert busy  # the others waited for one of the two slots, in vain
    assert "CTXSTREAM_HEAVY_READS" in busy[0].reason
    assert busy[0].retry_after_s > 0


def test_an_as_of_read_whose_client_went_away_stops_its_thread(
    heavy_deployment: ProjectorSettings, long_session: tuple[SessionKey, int]
) -> None:
    long_key, last = long_session
    stopped = f"heavy read stopped: its client went away session={long_key}"
    before = _log(heavy_deployment).count(stopped)

    async def abandon() -> None:
        owners = await claims(heavy_deployment)
        partition = session_partition(long_key.encode(), heavy_deployment.events_partitions)
        claim = owners.owner(partition)
        assert claim is not None
        url = f"http://{claim.address}{read_path(long_key, 'context')}"
        params = {"as_of": str(last - 1), "timeout_s": str(HEAVY_TIMEOUT_S)}
        credential = {"Authorization": read_keys(heavy_deployment).authorization}
        async with aiohttp.ClientSession(headers=credential) as http:
            with pytest.raises(TimeoutError):  # the client gives up long before the answer
                await http.get(url, params=params, timeout=aiohttp.ClientTimeout(total=0.3))

    asyncio.run(abandon())

    async def logged() -> bool:
        return _log(heavy_deployment).count(stopped) > before

    asyncio.run(wait_for("the abandoned read's thread to stop", logged, LOG_TIMEOUT_S))


def test_a_fork_reads_its_source_from_the_sources_first_offset_not_the_log_start(
    heavy_deployment: ProjectorSettings, long_session: tuple[SessionKey, int]
) -> None:
    _, last = long_session
    source, fork = _keys_on(heavy_deployment.events_partitions, 0, 2)
    with SyncClient(settings=heavy_deployment) as client:
        offsets = client.append_many(
            source, [text_event(f"s{i}", "i1", 100 + i, f"s{i}") for i in range(3)]
        )
        assert offsets[0] > last  # the long session's records lie below the source's first
        forked = client.fork(source, offsets[-1], fork, timeout_s=FOLDED_TIMEOUT_S)
        contents = client.context(fork, min_offset=forked, timeout_s=FOLDED_TIMEOUT_S)
    assert [c.parts[0].text for c in contents if c.parts] == ["s0", "s1", "s2"]
    read = re.search(
        rf"session={re.escape(source)} history read: (\d+) records of offsets \[(\d+), (\d+)\)",
        _log(heavy_deployment),
    )
    assert read is not None
    assert (int(read[1]), int(read[2]), int(read[3])) == (3, offsets[0], offsets[-1] + 1)


def test_a_history_read_past_its_timeout_quarantines_the_fork_and_the_worker_folds_on(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    with serving_worker(
        kafka_bootstrap,
        tmp_path,
        "slowhistory",
        view_agent_names=VIEW_AGENTS,
        history_read_timeout_s=0.000_001,  # no history read finishes in time
    ) as deployment:
        partitions = deployment.events_partitions
        source, fork = _keys_on(partitions, 0, 2)
        (other,) = _keys_on(partitions, 1, 1)
        with SyncClient(settings=deployment) as client:
            offsets = client.append_many(
                source, [text_event(f"s{i}", "i1", 100 + i) for i in range(2)]
            )
            forked = client.fork(source, offsets[-1], fork, timeout_s=FOLDED_TIMEOUT_S)
            # The fork's session alone stops: its projection holds nothing...
            with pytest.raises(SessionNotFoundError):
                client.projection(fork, forked, timeout_s=FOLDED_TIMEOUT_S)
            # ...while the worker folds on, the source's partition and another's.
            again = client.append(source, text_event("s2", "i2", 200))
            assert client.projection(source, again, timeout_s=FOLDED_TIMEOUT_S).last_offset == again
            started = time.monotonic()
            offset = client.append(other, text_event("o", "i1", 100))
            assert client.context(other, min_offset=offset, timeout_s=FOLDED_TIMEOUT_S)
            assert time.monotonic() - started < FOLDED_TIMEOUT_S
        log = _log(deployment)
    assert f"session {fork} quarantined: its history on events was not read within" in log
    assert "history_read_timeout_s=1e-06 s" in log


#: Forks of the long session sent at once: inline, their folds held every partition for longer
#: than the quiet session's timeout.
FORKS: Final = 4


def test_a_quiet_session_reads_its_writes_while_forks_of_the_long_session_are_folded(
    heavy_deployment: ProjectorSettings, long_session: tuple[SessionKey, int]
) -> None:
    long_key, last = long_session
    partitions = heavy_deployment.events_partitions
    forks = _keys_on(partitions, 0, FORKS)  # the forks' partition is the long session's
    (quiet,) = _keys_on(partitions, 1, 1)
    cut = last - 10  # one fork stops before the long session's end

    async def run() -> tuple[int, list[int], list[object], list[object]]:
        async with Client(settings=heavy_deployment) as client:
            with contextlib.suppress(SessionNotFoundError):  # routed, warm; nothing in it yet
                await client.context(quiet, timeout_s=QUIET_TIMEOUT_S)
            ats = [last] * (FORKS - 1) + [cut]

            async def forked() -> list[int]:
                started = [
                    client.fork(long_key, at, fork, timeout_s=FOLDED_TIMEOUT_S)
                    for at, fork in zip(ats, forks, strict=True)
                ]
                offsets: list[int] = list(await asyncio.gather(*started))
                for fork, offset in zip(forks, offsets, strict=True):  # folded, all of them
                    await client.projection(fork, offset, timeout_s=FOLDED_TIMEOUT_S)
                return offsets

            folding = asyncio.create_task(forked())
            quiet_trips = await _quiet_round_trips(client, quiet, folding)
            offsets = await folding
            contexts: list[object] = [
                await client.context(fork, min_offset=offset, timeout_s=FOLDED_TIMEOUT_S)
                for fork, offset in zip(forks, offsets, strict=True)
            ]
            sources: list[object] = [
                await client.context(long_key, min_offset=last, timeout_s=FOLDED_TIMEOUT_S),
                await client.context_as_of(long_key, cut, timeout_s=HEAVY_TIMEOUT_S),
            ]
            return quiet_trips, offsets, contexts, sources

    quiet_trips, offsets, contexts, (whole, before_cut) = asyncio.run(run())
    assert len(offsets) == FORKS
    # Each fork's context is its source's up to the fork's offset.
    assert contexts == [whole] * (FORKS - 1) + [before_cut]
    assert whole != before_cut
    # The quiet session, on another partition, was answered within its own timeout throughout.
    assert quiet_trips >= QUIET_ROUND_TRIPS
