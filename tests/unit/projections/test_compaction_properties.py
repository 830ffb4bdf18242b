"""Properties of compaction windows and records over generated sessions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.obligations import call_ids, dead_call_ids, request_keys, response_ids
from projections.contents.snapshot import to_snapshot
from projections.fold.projection import project
from projections.fold.rewind import drop_rewound
from schemas.codec import (
    decode_compaction_request,
    decode_envelope,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest, compaction_request_id
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.events import SESSION, TENANT
from tests.support.strategies import sessions

EXAMPLES = 40


@st.composite
def configs(draw: st.DrawFn) -> CompactionConfig:
    """Sliding-window, token-threshold or both, with small numbers so they fire."""
    sliding, token = draw(st.sampled_from(((True, False), (False, True), (True, True))))
    return CompactionConfig(
        compaction_interval=draw(st.integers(1, 3)) if sliding else None,
        overlap_size=draw(st.integers(0, 2)) if sliding else None,
        token_threshold=draw(st.integers(1, 300)) if token else None,
        event_retention_size=draw(st.integers(0, 3)) if token else None,
    )


def _left_open(window: tuple[Event, ...]) -> set[str]:
    """Obligations left open: per event, responses close, then calls and requests open."""
    open_ids: set[str] = set()
    for event in window:
        open_ids.difference_update(response_ids(event))
        open_ids.update(call_ids(event), request_keys(event))
    return open_ids


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions(), configs())
def test_no_window_leaves_an_answerable_obligation_open(
    log: list[LoggedEvent], config: CompactionConfig
) -> None:
    events = [record.envelope.event for record in log]
    for length in range(1, len(events) + 1):
        prefix = events[:length]
        window = select_post_invocation_window(prefix, config)
        if window is None:
            continue
        live = [e for e in drop_rewound(prefix) if e.isolation_scope is None]
        summarized = window.summarized_events
        assert summarized, f"empty window after {length} events"
        # Open calls, confirmation and auth requests are allowed only when
        # proven dead (reference §3.4): nothing can answer them any more.
        assert _left_open(summarized) <= dead_call_ids(summarized, live), f"after {length}"
        assert all(e.actions.compaction is None for e in summarized)


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions())
def test_generated_records_round_trip_through_the_codec(log: list[LoggedEvent]) -> None:
    for record in log:
        assert decode_envelope(encode(record.envelope)) == record.envelope
    snapshot = to_snapshot(project(SESSION, log))
    assert decode_projection_snapshot(encode(snapshot)) == snapshot


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions(), configs())
def test_requests_for_chosen_windows_round_trip(
    log: list[LoggedEvent], config: CompactionConfig
) -> None:
    window = select_post_invocation_window([r.envelope.event for r in log], config)
    if window is None:
        return
    offset_of = {record.envelope.event.id: record.offset for record in log}
    offsets = tuple(Offset(offset_of[event_id]) for event_id in window.event_ids)
    request = CompactionRequest(
        request_id=compaction_request_id(SESSION, window.trigger, offsets),
        tenant=TENANT,
        session_key=SESSION,
        trigger=window.trigger,
        event_offsets=offsets,
        event_ids=window.event_ids,
        start_timestamp=window.start_timestamp,
        end_timestamp=window.end_timestamp,
        decided_at_offset=log[-1].offset,
    )
    assert decode_compaction_request(encode(request)) == request
