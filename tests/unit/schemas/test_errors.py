"""The messages of ctxstream's own errors: escaped, bounded and exact."""

from __future__ import annotations

from schemas.errors import CtxstreamError, DecodeError, InvalidSessionKeyError, TopicError


def test_a_decode_reason_of_exactly_the_limit_is_kept_whole() -> None:
    error = DecodeError("a" * 1000)
    assert error.reason == "a" * 1000
    assert str(error) == "a" * 1000


def test_a_decode_reason_longer_once_escaped_is_cut_to_the_limit() -> None:
    # 1,000 newlines escape to 4,000 characters: 997 of them are kept, then "...".
    error = DecodeError("\n" * 1000)
    expected = "\\x0a" * 249 + "\\" + "..."
    assert len(expected) == 1000
    assert error.reason == expected
    assert str(error) == expected


def test_a_session_key_of_80_characters_is_quoted_whole() -> None:
    key = "k" * 80
    error = InvalidSessionKeyError(key, "too few parts")
    assert str(error) == f"invalid session key '{key}': too few parts"
    assert error.key == key
    assert error.problem == "too few parts"


def test_a_longer_session_key_is_cut_to_77_characters() -> None:
    error = InvalidSessionKeyError("k" * 81, "too few parts")
    assert str(error) == "invalid session key '" + "k" * 77 + "...': too few parts"
    assert error.key == "k" * 81


def test_a_topic_error_names_the_topic_and_what_is_wrong_and_is_not_retried() -> None:
    error = TopicError("prod.events", "does not exist: run `ctxstream topics create`")
    assert str(error) == "topic 'prod.events' does not exist: run `ctxstream topics create`"
    assert (error.topic, error.retriable) == ("prod.events", False)
    assert isinstance(error, CtxstreamError)
