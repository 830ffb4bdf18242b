"""A fork folds as the session whose history is its source's up to the fork, then its own.

The oracle is that one session, written out: the source's records up to the
cut followed by the fork's, all under the fork's key at their own offsets,
folded by the plain fold, and its contents rebuilt by the separately written
:func:`~projections.fold.rebuild.rebuild_contents`. The fork itself is folded as
the projector folds it: the inherited records at their negative places, the
fork record, then its own records at offsets that may lie below the
source's.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import step
from projections.compaction.gate_memo import GateBound, GateMemo
from projections.compaction.in_flight import InFlightRequest
from projections.compaction.summary_request import refusal_event
from projections.contents.assembly import ContentsRequest
from projections.contents.snapshot import to_snapshot
from projections.fold.fork import ForkError, ForkSource, fork_event, fork_source, inherited
from projections.fold.projection import (
    NO_OFFSET,
    SessionProjection,
    apply,
    context_contents,
    inheriting,
)
from projections.fold.rebuild import rebuild_contents
from projections.retention.retained_vector import NeedsHistory
from projections.retention.state_codec import decode_state, encode_state
from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    envelope,
    exchange,
    logged,
    request_for,
    summary_event,
)
from tests.support.next_agent_oracle import expected_view_request
from tests.support.ordered import compaction_configs
from tests.support.strategies import sessions

FORK = SessionKey(SESSION.rsplit("/", 1)[0] + "/forked")
OTHER_TENANT = SessionKey("globex/app/u1/s1")
_BAD_FIRST = "^fork_of.first_offset must be a Kafka offset"


def _fork_record(
    offset: int, source: SessionKey = SESSION, at: int = 0, first: int | None = None
) -> LoggedEvent:
    named = ForkSource(source, Offset(at), None if first is None else Offset(first))
    event = fork_event(named, event_id=f"fork-{offset}", timestamp=0.0)
    return LoggedEvent(Offset(offset), envelope(FORK, event))


def _rekeyed(record: LoggedEvent, key: SessionKey, offset: int) -> LoggedEvent:
    env = record.envelope
    moved = Envelope(
        tenant=env.tenant,
        session_key=key,
        producer_id=env.producer_id,
        idempotency_key=env.idempotency_key,
        event=env.event,
    )
    return LoggedEvent(Offset(offset), moved)


def _fold(
    start: SessionProjection, records: list[LoggedEvent], config: CompactionConfig
) -> tuple[SessionProjection, list[CompactionRequest]]:
    projection, requests = start, []
    for record in records:
        done = step(projection, record, config)
        projection = done.projection
        if done.request is not None:
            requests.append(done.request)
    return projection, requests


def _window(request: CompactionRequest) -> tuple[object, ...]:
    return (request.trigger, request.event_ids, request.start_timestamp, request.end_timestamp)


@settings(max_examples=150)
@given(records=sessions(), config=compaction_configs(), data=st.data())
def test_a_fork_folds_as_its_source_up_to_the_cut_then_its_own(
    records: list[LoggedEvent], config: CompactionConfig, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(1, len(records)), label="cut")
    fork_offset = data.draw(st.integers(0, 5), label="fork offset")
    source, own = records[:cut], records[cut:]
    line = inherited(source)
    assert [r.origin_offset for r in line] == [r.offset for r in source]
    assert [r.offset for r in line] == list(range(-len(source) - 1, -1))
    fork = [
        _fork_record(fork_offset, at=source[-1].offset),
        *(_rekeyed(r, FORK, fork_offset + 1 + i) for i, r in enumerate(own)),
    ]
    start = inheriting(SessionProjection(FORK))
    for record in line:  # the projector folds inherited records without deciding
        start = apply(start, record)
    forked, requests = _fold(start, fork, config)

    whole = [_rekeyed(r, FORK, i) for i, r in enumerate(records)]
    oracle = SessionProjection(FORK)
    for record in whole[:cut]:
        oracle = apply(oracle, record)
    oracle, oracle_requests = _fold(oracle, whole[cut:], config)

    assert forked.forked_at == fork_offset
    assert forked.last_offset == fork_offset + len(own)
    view = expected_view_request(whole, ContentsRequest())
    assert forked.view.request == view
    assert context_contents(forked) == rebuild_contents(whole, view)
    assert forked.state == oracle.state
    assert forked.invocations == oracle.invocations
    assert forked.tokens == oracle.tokens
    assert [_window(r) for r in requests] == [_window(r) for r in oracle_requests]
    for request in requests:  # every inherited event of a window says where it is
        assert request.fork_offset == (fork_offset if request.inherited else None)
        for named in request.inherited:
            assert named.session_key == SESSION
            assert source[named.offset + len(source) + 1].offset == named.origin_offset
    assert decode_state(encode_state(forked)) == forked


def test_a_fork_of_a_fork_inherits_the_whole_line_with_its_origins() -> None:
    events = [e for n in range(3) for e in exchange(n, 100.0 + 10 * n)]
    first = logged(events[:4], [10, 11, 12, 13])
    line = inherited(first)
    middle = [_fork_record(2, at=13), *logged(events[4:], [3, 4], key=FORK)]
    again = inherited([*line, *middle])
    assert [(r.offset, r.origin_offset, r.envelope.session_key) for r in again] == [
        (-7, 10, SESSION),
        (-6, 11, SESSION),
        (-5, 12, SESSION),
        (-4, 13, SESSION),
        (-3, 3, FORK),
        (-2, 4, FORK),
    ]


def test_a_summary_the_fork_inherited_is_its_boundary_named_where_it_is() -> None:
    events = [*exchange(1, 100.0), summary_event("sum1", 100.0, 101.0, 102.0)]
    source = logged(events, [40, 41, 42])
    projection = inheriting(SessionProjection(FORK))
    for record in inherited(source):
        projection = apply(projection, record)
    forked = apply(projection, _fork_record(0, at=42))
    boundary = to_snapshot(forked).boundary
    assert boundary is not None
    assert (boundary.summary_event_id, boundary.summary_offset) == ("sum1", 42)
    assert boundary.inherited_from == SESSION
    own = apply(forked, logged([summary_event("sum2", 100.0, 101.0, 103.0)], [1], key=FORK)[0])
    boundary = to_snapshot(own).boundary
    assert boundary is not None
    assert (boundary.summary_event_id, boundary.summary_offset) == ("sum2", 1)
    assert boundary.inherited_from is None


def test_a_fork_record_asks_for_its_inheritance_first() -> None:
    with pytest.raises(NeedsHistory):
        apply(SessionProjection(FORK), _fork_record(0))
    nothing_inherited = apply(inheriting(SessionProjection(FORK)), _fork_record(3))
    assert (nothing_inherited.last_offset, nothing_inherited.forked_at) == (3, 3)


def test_a_fork_record_after_the_sessions_own_records_inherits_nothing() -> None:
    own = logged(exchange(1, 100.0), [0, 1], key=FORK)
    projection = apply(apply(SessionProjection(FORK), own[0]), own[1])
    after = apply(projection, _fork_record(2))
    assert after.last_offset == 2
    assert after.forked_at is None
    assert context_contents(after) == context_contents(projection)


def test_inherited_records_clear_the_sources_wait_and_keep_no_offset_of_the_source() -> None:
    source = logged(exchange(1, 100.0), [40, 41])
    projection = inheriting(SessionProjection(FORK))
    for record in inherited(source):
        projection = apply(projection, record)
    assert projection.last_offset == -2 < NO_OFFSET
    forked = apply(projection, _fork_record(0, at=41))
    assert forked.last_offset == 0


@pytest.mark.parametrize(
    ("named", "problem"),
    [
        ({"session_key": OTHER_TENANT, "offset": 3}, "another tenant's session"),
        ({"session_key": FORK, "offset": 3}, "^a session cannot fork from itself$"),
        ({"session_key": 7, "offset": 3}, "^fork_of.session_key must be a string$"),
        ({"session_key": SESSION, "offset": 2**63}, "a Kafka offset"),
        ({"session_key": "not a key", "offset": 3}, "not a session of this tenant"),
        ({"session_key": SESSION, "offset": -1}, "a Kafka offset"),
        ({"session_key": SESSION, "offset": True}, "a Kafka offset"),
        ({"session_key": SESSION}, "of session_key and offset"),
        ("acme", "of session_key and offset"),
        ({"session_key": SESSION, "offset": 3, "extra": 1}, "optionally first_offset"),
        *(
            ({"session_key": SESSION, "offset": 3, "first_offset": first}, _BAD_FIRST)
            for first in (-1, "1", 1.0, True, None, 2**63)
        ),
        (
            {"session_key": SESSION, "offset": 3, "first_offset": 4},
            r"first_offset must be .* at most fork_of.offset \(3\)",
        ),
    ],
)
def test_a_malformed_fork_record_says_what_is_wrong(named: object, problem: str) -> None:
    event = {
        "id": "f",
        "author": "ctxstream",
        "timestamp": 0.0,
        "customMetadata": {"ctxstream": {"fork_of": named}},
    }
    with pytest.raises(ForkError, match=problem):
        fork_source(envelope(FORK, event))


def test_a_fork_record_names_its_source_and_offset() -> None:
    for offset in (0, 41, 2**63 - 1):
        source = ForkSource(SESSION, Offset(offset))
        event = fork_event(source, event_id="f", timestamp=0.0)
        assert fork_source(envelope(FORK, event)) == source


def test_a_fork_record_names_where_its_source_starts_when_told() -> None:
    for first, offset in ((0, 0), (0, 41), (12, 41), (41, 41), (2**63 - 1, 2**63 - 1)):
        source = ForkSource(SESSION, Offset(offset), Offset(first))
        event = fork_event(source, event_id="f", timestamp=0.0)
        assert event.custom_metadata == {
            "ctxstream": {
                "fork_of": {"session_key": SESSION, "offset": offset, "first_offset": first}
            }
        }
        assert fork_source(envelope(FORK, event)) == source


def test_a_fork_record_without_a_first_offset_is_as_it_always_was() -> None:
    event = fork_event(ForkSource(SESSION, Offset(41)), event_id="f", timestamp=0.0)
    assert encode(event) == (  # the bytes fork_event wrote before first_offset existed
        b'{"id":"f","invocationId":"","author":"ctxstream","nodeInfo":{"path":""},'
        b'"timestamp":0.0,"customMetadata":{"ctxstream":{"fork_of":'
        b'{"session_key":"acme/support/u1/s1","offset":41}}},"actions":{"stateDelta":{},'
        b'"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}}}'
    )
    assert fork_source(envelope(FORK, event)) == ForkSource(SESSION, Offset(41), None)


@settings(max_examples=100)
@given(records=sessions(), config=compaction_configs(), data=st.data())
def test_the_fold_of_a_fork_is_the_same_with_or_without_where_its_source_starts(
    records: list[LoggedEvent], config: CompactionConfig, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(1, len(records)), label="cut")
    at = records[cut - 1].offset
    first = data.draw(st.integers(0, at), label="first offset")
    source, own = records[:cut], records[cut:]
    start = inheriting(SessionProjection(FORK))
    for record in inherited(source):
        start = apply(start, record)
    mine = [_rekeyed(r, FORK, 1 + i) for i, r in enumerate(own)]
    plain, plain_requests = _fold(start, [_fork_record(0, at=at), *mine], config)
    hinted, hinted_requests = _fold(start, [_fork_record(0, at=at, first=first), *mine], config)
    assert to_snapshot(hinted) == to_snapshot(plain)
    assert context_contents(hinted) == context_contents(plain)
    assert (hinted.state, hinted.invocations, hinted.tokens) == (
        plain.state,
        plain.invocations,
        plain.tokens,
    )
    assert (hinted.last_offset, hinted.forked_at) == (plain.last_offset, plain.forked_at)
    assert [_window(r) for r in hinted_requests] == [_window(r) for r in plain_requests]


def test_other_bookkeeping_records_are_no_fork_records() -> None:
    refusal = refusal_event("r1", "gave up", event_id="x", timestamp=0.0)
    assert fork_source(envelope(FORK, refusal)) is None


def test_a_malformed_fork_record_is_never_inherited() -> None:
    event = {
        "id": "bad-fork",
        "author": "ctxstream",
        "timestamp": 0.0,
        "customMetadata": {"ctxstream": {"fork_of": "acme"}},
    }
    bad = LoggedEvent(Offset(3), envelope(SESSION, event))
    kept = logged(exchange(1, 100.0)[:1], [4])
    assert [r.envelope.event.id for r in inherited([bad, *kept])] == ["q1"]


def test_an_event_with_content_is_no_fork_record() -> None:
    event = {
        "id": "f",
        "author": "user",
        "timestamp": 0.0,
        "content": {"role": "user", "parts": [{"text": "hi"}]},
        "customMetadata": {"ctxstream": {"fork_of": {"session_key": SESSION, "offset": 1}}},
    }
    assert fork_source(envelope(FORK, event)) is None


def test_a_fork_record_without_its_inheritance_names_what_is_missing() -> None:
    with pytest.raises(NeedsHistory) as raised:
        apply(SessionProjection(FORK), _fork_record(0))
    assert raised.value.what == "the records a fork inherits"


def test_a_fork_record_after_one_own_record_at_offset_zero_inherits_nothing() -> None:
    own = logged(exchange(1, 100.0)[:1], [0], key=FORK)
    projection = apply(SessionProjection(FORK), own[0])
    assert projection.last_offset == 0
    after = apply(projection, _fork_record(1))
    assert (after.last_offset, after.forked_at) == (1, None)
    assert after.log == projection.log


def test_a_fork_record_drops_the_sources_wait_and_gate_memo() -> None:
    source = logged(exchange(1, 100.0), [40, 41])
    projection = inheriting(SessionProjection(FORK))
    for record in inherited(source):
        projection = apply(projection, record)
    waiting = replace(
        projection,
        in_flight=InFlightRequest.of(request_for(source)),
        gate_memo=GateMemo(GateBound(200.0, 25), None, None),
    )
    forked = apply(waiting, _fork_record(0, at=41))
    assert (forked.in_flight, forked.gate_memo, forked.forked_at) == (None, None, 0)
