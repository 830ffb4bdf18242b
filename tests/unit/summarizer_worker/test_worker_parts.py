"""Small parts of the summarizer worker: backoff, locks, topics, partitions, stages, validity."""

from __future__ import annotations

import asyncio
import math

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaConnectionError

from schemas.keys import Offset, SessionKey, TenantId
from streams.settings import KafkaSettings
from streams.topics import TOPIC_ROLES, topic_name
from summarizer_worker.backoff import retry_delay_s
from summarizer_worker.errors import (
    RangeNotFoundError,
    RangeNotStableError,
    RequestFailedError,
    SummarizerUnavailableError,
)
from summarizer_worker.partition_lane import transactional_id
from summarizer_worker.request_stage import at_stage, failure_reason
from summarizer_worker.request_validity import MAX_REQUEST_ID_CHARS, request_problem
from summarizer_worker.session_locks import SessionLocks
from summarizer_worker.session_slice import event_partition
from summarizer_worker.settings import SummarizerSettings
from tests.support.events import request_for, request_with, session


def test_the_retry_delay_doubles_up_to_its_bound_and_honours_an_asked_delay() -> None:
    delays = [retry_delay_s(n, base_s=1.0, max_s=60.0) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert retry_delay_s(1, base_s=1.0, max_s=60.0, asked_s=5.0) == 5.0
    assert retry_delay_s(1, base_s=1.0, max_s=3.0, asked_s=5.0) == 3.0
    assert retry_delay_s(10_000, base_s=1.0, max_s=60.0) == 60.0
    with pytest.raises(ValueError, match="follows a failure"):
        retry_delay_s(0, base_s=1.0, max_s=1.0)


async def test_one_session_waits_for_its_lock_while_another_goes_on() -> None:
    locks = SessionLocks()
    order: list[str] = []
    first_holds = asyncio.Event()
    release = asyncio.Event()

    async def hold(key: str, name: str, *, wait: bool) -> None:
        async with locks.hold(SessionKey(key)):
            order.append(f"{name} in")
            if wait:
                first_holds.set()
                await release.wait()
            order.append(f"{name} out")

    first = asyncio.create_task(hold("t/a/u/s1", "first", wait=True))
    await first_holds.wait()
    same = asyncio.create_task(hold("t/a/u/s1", "same", wait=False))
    other = asyncio.create_task(hold("t/a/u/s2", "other", wait=False))
    await other
    assert order == ["first in", "other in", "other out"]
    assert len(locks) == 1
    release.set()
    await asyncio.gather(first, same)
    assert order[3:] == ["first out", "same in", "same out"]
    assert len(locks) == 0


def test_topic_names_are_the_ones_the_deployment_creates() -> None:
    worker = SummarizerSettings(topic_prefix="acme-prod")
    deployment = KafkaSettings(topic_prefix="acme-prod")
    for role in TOPIC_ROLES:
        assert worker.topic(role) == topic_name(deployment, role)


def test_a_request_partition_has_one_transactional_id_per_group() -> None:
    assert transactional_id("g", TopicPartition("p.compaction-requests", 3)) == (
        "g.p.compaction-requests.3"
    )


def test_a_session_always_maps_to_one_partition_in_range() -> None:
    keys = [f"t/a/u/s{n}".encode() for n in range(200)]
    chosen = [event_partition(key, 12) for key in keys]
    assert chosen == [event_partition(key, 12) for key in keys]
    assert set(chosen) == set(range(12))  # 200 keys spread over every partition
    with pytest.raises(ValueError, match="at least one"):
        event_partition(b"k", 0)


def test_a_request_the_projector_writes_has_no_problem() -> None:
    assert request_problem(request_for(session(2))) is None


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"tenant": TenantId("evil")}, "tenant 'evil' does not own session 'acme/support/u1/s1'"),
        ({"request_id": "r" * 300}, "(300 characters) is not 1 to 64"),
        ({"request_id": "r\nFORGED"}, "request id 'r\\x0aFORGED'"),
        ({"event_offsets": (Offset(-1),)}, "offset -1 is negative"),
        ({"decided_at_offset": Offset(-5)}, "offset -5 is negative"),
        ({"start_timestamp": math.inf}, "not finite"),
        ({"end_timestamp": math.nan}, "not finite"),
    ],
    ids=["tenant", "long-id", "id-newline", "offset", "decided-at", "inf", "nan"],
)
def test_a_request_no_valid_answer_can_name_has_a_problem(
    changes: dict[str, object], problem: str
) -> None:
    found = request_problem(request_with(**changes))
    assert found is not None
    assert problem in found
    assert "\n" not in found


def test_an_id_of_the_longest_length_allowed_is_fine() -> None:
    assert request_problem(request_with(request_id="a" * MAX_REQUEST_ID_CHARS)) is None
    assert request_problem(request_with(request_id="a" * (MAX_REQUEST_ID_CHARS + 1))) is not None


def test_a_failure_inside_a_stage_is_the_requests_failure_with_its_stage() -> None:
    with pytest.raises(RequestFailedError) as caught, at_stage("check"):
        raise ValueError("bad\nline")
    assert (caught.value.stage, caught.value.reason) == ("check", "ValueError: bad\\x0aline")
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_recursion_error_is_a_requests_failure_too() -> None:
    def deep(n: int) -> int:
        return deep(n + 1) + 1

    with pytest.raises(RequestFailedError) as caught, at_stage("decode"):
        deep(0)
    assert caught.value.reason.startswith("RecursionError: ")


def test_our_own_errors_keep_their_message_as_the_reason() -> None:
    with pytest.raises(RequestFailedError) as caught, at_stage("check"):
        raise RangeNotFoundError(request_id="r1", problem="offset 3 holds event 'x'")
    assert caught.value.reason == "range not found for request r1: offset 3 holds event 'x'"


def test_errors_the_retry_loop_sorts_and_infrastructure_errors_pass_unchanged() -> None:
    with pytest.raises(RangeNotStableError), at_stage("check"):
        raise RangeNotStableError(request_id="r", end_offset=5, stable_offset=3)
    with pytest.raises(SummarizerUnavailableError), at_stage("summarize"):
        raise SummarizerUnavailableError("down", status=503, excerpt="")
    with pytest.raises(KafkaConnectionError), at_stage("read", passing=(KafkaConnectionError,)):
        raise KafkaConnectionError("broker gone")
    with pytest.raises(RequestFailedError) as caught, at_stage("read"):
        raise RequestFailedError(stage="validate", reason="kept")
    assert caught.value.stage == "validate"


def test_a_reason_survives_an_exception_whose_message_raises() -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert failure_reason(Hostile()) == "Hostile"
    assert len(failure_reason(ValueError("x" * 10_000))) < 1_100
