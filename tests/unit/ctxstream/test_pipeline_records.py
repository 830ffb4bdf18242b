"""A caller's append refuses the pipeline's own bookkeeping records (N-L1, probe P1)."""

from __future__ import annotations

import pytest

from ctxstream.appends.event_records import event_record
from ctxstream.appends.fork_record import fork_record
from ctxstream.errors import InvalidEventError
from projections.compaction.summary_request import refusal_event, with_summary_request_id
from schemas.event import event_to_json
from tests.support.events import summary_event, text_event

KEY = "evil/app/u1/f9"


def test_a_raw_fork_record_is_refused() -> None:
    raw = {
        "id": "f9",
        "author": "ctxstream",
        "timestamp": 1,
        "customMetadata": {
            "ctxstream": {"fork_of": {"session_key": "acme/app/u1/s1", "offset": 0}}
        },
    }
    with pytest.raises(InvalidEventError, match="author: 'ctxstream'"):
        event_record(KEY, raw, producer_id="p")


def test_a_fork_record_of_another_author_is_refused() -> None:
    raw = {
        "author": "user",
        "timestamp": 1,
        "customMetadata": {
            "ctxstream": {"fork_of": {"session_key": "evil/app/u1/s1", "offset": 2**63 - 1}}
        },
    }
    with pytest.raises(InvalidEventError, match=r"customMetadata\.ctxstream"):
        event_record(KEY, raw, producer_id="p")


def test_a_refusal_is_refused() -> None:
    refusal = refusal_event("r1", "gave up", event_id="x", timestamp=1.0)
    with pytest.raises(InvalidEventError, match="author"):
        event_record(KEY, refusal, producer_id="p")
    as_user = {**event_to_json(refusal), "author": "user"}
    with pytest.raises(InvalidEventError, match=r"customMetadata\.ctxstream"):
        event_record(KEY, as_user, producer_id="p")


def test_the_fork_call_may_append_its_record() -> None:
    event = fork_record("evil/app/u1/s1", 3, KEY, event_id="f", timestamp=1.0)
    key, value = event_record(KEY, event, producer_id="p", pipeline=True)
    assert key == KEY.encode()
    assert b'"fork_of"' in value


def test_callers_events_and_summaries_naming_their_request_pass() -> None:
    event_record(KEY, text_event("e1", "inv1", 1.0, "hello"), producer_id="p")
    summary = with_summary_request_id(summary_event("s1", 1.0, 2.0, 3.0), "req-1")
    event_record(KEY, summary, producer_id="p")


def test_the_value_is_an_exact_size_copy() -> None:
    _, value = event_record(KEY, {"author": "user", "timestamp": 1}, producer_id="p")
    assert type(value) is bytes
    assert value.__sizeof__() - len(value) < 64  # orjson's own buffer keeps kilobytes more
