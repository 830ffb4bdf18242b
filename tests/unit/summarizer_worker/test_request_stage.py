"""A request's failures inside a stage: its stage and a reason one line long; others pass."""

from __future__ import annotations

import pytest
from aiokafka.errors import KafkaConnectionError

from summarizer_worker.errors import (
    RangeNotFoundError,
    RangeNotStableError,
    RequestFailedError,
    SummarizerUnavailableError,
)
from summarizer_worker.request_stage import at_stage, failure_reason


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
