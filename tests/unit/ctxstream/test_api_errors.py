"""Every failure the HTTP API answers, as its code and status."""

from __future__ import annotations

import pytest
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

from ctxstream.api.errors import ERROR_STATUS, ApiError, api_error_of
from ctxstream.api.key_store import KeyDirectoryUnavailableError
from ctxstream.errors import (
    BrokerUnavailableError,
    ContextReadError,
    InvalidArgumentError,
    InvalidEventError,
    NoPartitionOwnerError,
    ReadTimeoutError,
    SessionNotFoundError,
    TopicMissingError,
)
from schemas.errors import CtxstreamError

KEY = "acme/support/u1/s1"


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (InvalidArgumentError("min_offset: negative"), "invalid-argument", 422),
        (InvalidEventError("events[0]: event.author: Field required"), "invalid-argument", 422),
        (ReadTimeoutError(session_key=KEY, reason="not folded"), "timeout", 504),
        (NoPartitionOwnerError(session_key=KEY, partition=3, reason="none"), "unavailable", 503),
        (BrokerUnavailableError(bootstrap="b:1", reason="down"), "broker-unavailable", 503),
        (KafkaConnectionError("Unable to bootstrap"), "broker-unavailable", 503),
        (SessionNotFoundError(session_key=KEY, reason="no records"), "session-not-found", 404),
        (TopicMissingError("p.projections"), "unavailable", 503),
        (KeyDirectoryUnavailableError("stale"), "unavailable", 503),
        (ContextReadError(session_key=KEY, reason="quarantined"), "read-failed", 502),
        (KafkaTimeoutError(), "unavailable", 503),
        (CtxstreamError("something else"), "internal", 500),
    ],
)
def test_each_failure_has_its_code_and_status(
    error: CtxstreamError | KafkaTimeoutError, code: str, status: int
) -> None:
    answer = api_error_of(error)
    assert answer.code == code
    assert ERROR_STATUS[answer.code] == status
    assert answer.response().status_code == status


def test_an_internal_error_says_nothing_of_its_cause() -> None:
    answer = api_error_of(CtxstreamError("secret detail of a bug"))
    assert "secret detail" not in answer.reason


def test_a_reason_is_one_bounded_escaped_line() -> None:
    answer = ApiError("invalid-argument", "session_key: 'a\nb\x1b[2J'" + "x" * 5_000)
    assert "\n" not in answer.reason
    assert "\x1b" not in answer.reason
    assert answer.reason.endswith("x...")  # cut after 1,000 characters, then escaped
    assert len(answer.reason) < 1_100
    assert bytes(answer.response().body).startswith(b'{"error":"invalid-argument","reason":')


def test_an_unauthorized_answer_names_the_scheme() -> None:
    response = ApiError("unauthorized", "no API key").response()
    assert response.headers["WWW-Authenticate"] == "Bearer"
