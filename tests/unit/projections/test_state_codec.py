"""A projection's bytes decode to the very projection, released or not.

The oracle is the projection itself: generated sessions (rewinds, retries,
chunks, refusals, scoped events, summaries, tool traffic) are folded with
decisions, released now and then, and at every record the decoded bytes
must equal the projection they came from, part for part; folding on from
the decoded projection is then folding on from the same value.
"""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions, step
from projections.compaction.gate_memo import GateBound, GateMemo
from projections.contents.assembly import ContentsRequest
from projections.fold.projection import SessionProjection, apply, empty_projection
from projections.retention.log_retention import retained
from projections.retention.retained_vector import NeedsHistory
from projections.retention.state_codec import StateDecodeError, decode_state, encode_state
from schemas.logged_event import LoggedEvent
from tests.support.conditional_records import with_conditions
from tests.support.events import SESSION, logged, text_event
from tests.support.ordered import compaction_configs
from tests.support.strategies import core_sessions


@settings(max_examples=200, deadline=None)
@given(
    with_conditions(core_sessions(refusals=True, deletions=True)), compaction_configs(), st.data()
)
def test_the_bytes_of_a_projection_decode_to_it(
    records: list[LoggedEvent], config: CompactionConfig, data: st.DataObject
) -> None:
    projection = SessionProjection(SESSION)
    folded: list[LoggedEvent] = []
    for record in records:
        try:
            projection = step(projection, record, config).projection
        except NeedsHistory:
            projection = replay_decisions(SESSION, [*folded, record], config)[0]
        folded.append(record)
        if data.draw(st.integers(0, 3)) == 0:
            projection = retained(projection, config, step=1)
        decoded = decode_state(encode_state(projection))
        assert decoded == projection


def test_a_long_released_session_round_trips_and_shares_its_records() -> None:
    config = CompactionConfig(compaction_interval=4, overlap_size=1)
    projection, _ = replay_decisions(BENCH_SESSION, bench_session(1_000), config)
    projection = retained(projection, config)
    assert projection.log.live.first > 0
    decoded = decode_state(encode_state(projection))
    assert decoded == projection
    # One object per record: the log's live tail and the view's raw events are the same records.
    live = {record.offset: record for record in decoded.log.live.tail}
    assert all(
        live[record.offset] is record for record in decoded.view.raw if record.offset in live
    )


def test_bytes_that_are_not_a_state_are_refused_with_the_reason() -> None:
    with pytest.raises(StateDecodeError, match="mark"):
        decode_state(b"{}")
    good = encode_state(SessionProjection(SESSION))
    with pytest.raises(StateDecodeError, match="unreadable"):
        decode_state(good[:-3])


def _document(raw: bytes) -> Any:
    """The JSON document of a state's bytes, read as the module doc's table lays them out."""
    assert raw[:3] == b"CS1"
    (length,) = struct.unpack(">I", raw[3:7])
    return orjson.loads(raw[7 : 7 + length])


def test_a_gate_memo_is_written_with_its_bounds_and_read_back() -> None:
    memo = GateMemo(GateBound(100.5, 27), GateBound(-math.inf, 3), 2)
    projection = replace(SessionProjection(SESSION), gate_memo=memo)
    raw = encode_state(projection)
    # Finite floats are JSON numbers; the others are strings (repr).
    assert _document(raw)["gate_memo"] == {
        "token": [100.5, 27],
        "sliding": ["-inf", 3],
        "overlap_size": 2,
    }
    assert decode_state(raw).gate_memo == memo
    assert decode_state(raw) == projection


def test_a_gate_memo_with_one_bound_round_trips_with_the_other_missing() -> None:
    for memo in (GateMemo(GateBound(7.0, 0), None, None), GateMemo(None, GateBound(1.25, 9), 0)):
        projection = replace(SessionProjection(SESSION), gate_memo=memo)
        raw = encode_state(projection)
        assert decode_state(raw).gate_memo == memo
    assert _document(encode_state(SessionProjection(SESSION)))["gate_memo"] is None


def test_a_view_for_a_configured_request_keeps_every_field_of_it() -> None:
    request = ContentsRequest(
        agent_name="root",
        current_branch="root.helper",
        preserve_function_call_ids=True,
        include_thoughts_from_other_agents=False,
        isolation_scope="scope-1",
    )
    projection = empty_projection(SESSION, request)
    events = [
        text_event("a1", "inv1", 100.0, isolation_scope="scope-1"),
        text_event("a2", "inv1", 101.0, author="root", isolation_scope="scope-1"),
    ]
    for record in logged(events, [0, 1]):
        projection = apply(projection, record)
    decoded = decode_state(encode_state(projection))
    assert decoded.view.request == request
    assert decoded == projection
    other = replace(
        request, preserve_function_call_ids=False, include_thoughts_from_other_agents=True
    )
    assert decode_state(encode_state(empty_projection(SESSION, other))).view.request == other


def test_bytes_without_the_mark_or_a_whole_length_are_refused_before_reading() -> None:
    good = encode_state(SessionProjection(SESSION))
    for raw in (b"XYZ" + good[3:], b"CS1", b"CS1\0", b"CS1\0\0\0"):
        with pytest.raises(StateDecodeError) as refused:
            decode_state(raw)
        assert str(refused.value) == "not a projection state: its mark is missing"
    # The mark and a whole length, then nothing: past the mark, the document is unreadable.
    with pytest.raises(StateDecodeError, match="unreadable"):
        decode_state(b"CS1\0\0\0\0")
