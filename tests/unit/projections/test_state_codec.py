"""A projection's bytes decode to the very projection, released or not.

The oracle is the projection itself: generated sessions (rewinds, retries,
chunks, refusals, scoped events, summaries, tool traffic) are folded with
decisions, released now and then, and at every record the decoded bytes
must equal the projection they came from, part for part; folding on from
the decoded projection is then folding on from the same value.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions, step
from projections.fold.projection import SessionProjection
from projections.retention.log_retention import retained
from projections.retention.retained_vector import NeedsHistory
from projections.retention.state_codec import StateDecodeError, decode_state, encode_state
from schemas.logged_event import LoggedEvent
from tests.support.events import SESSION
from tests.support.ordered import compaction_configs
from tests.support.strategies import core_sessions


@settings(max_examples=200, deadline=None)
@given(core_sessions(refusals=True), compaction_configs(), st.data())
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
