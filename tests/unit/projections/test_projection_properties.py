"""Properties of the session projection over generated sessions (see tests/support/strategies.py).

The incremental fold is held against plain rebuilds written from the rules:
the contents against ``build_contents`` of the effective records, the
counters against the definitions in the reference, the refused requests
against :func:`~projections.fold.rebuild.refused_requests`, the writer offset
and refused conditional records against :func:`~projections.fold.rebuild.judged`.
Generated sessions carry conditional and creation records
(tests/support/conditional_records.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.masking import latest_summary
from projections.compaction.sliding_window import previous_sliding_end
from projections.compaction.token_count import recorded_prompt_token_count
from projections.contents.assembly import ContentsRequest
from projections.event_kinds import is_creation, is_summary, refused_request_id, summary_request_id
from projections.fold.conditions import MAX_REFUSALS
from projections.fold.projection import (
    SessionProjection,
    apply,
    context_contents,
    empty_projection,
    live_events,
    project,
)
from projections.fold.rebuild import effective_records, judged, rebuild_contents, refused_requests
from projections.fold.rewind import drop_rewound
from projections.fold.state import SessionStores, append_event
from projections.fold.token_usage import MAX_TOKEN_TOTAL
from schemas.event import Content, content_to_json
from schemas.logged_event import LoggedEvent
from tests.support.conditional_records import with_conditions
from tests.support.events import SESSION
from tests.support.next_agent_oracle import expected_view_request
from tests.support.strategies import checked_prefixes, core_sessions, sessions, view_requests

# The core's main properties (the fold equals the rebuild, redelivery changes
# nothing) take their example counts from the hypothesis profile
# (tests/conftest.py: 100 by default, thousands under "deep", with large
# sessions); the others keep a moderate count of their own (CI has 2 cores).
EXAMPLES = 60


def _json(contents: list[Content]) -> list[dict[str, Any]]:
    return [content_to_json(content) for content in contents]


@pytest.mark.core_property
@settings(deadline=None)
@given(with_conditions(core_sessions(refusals=True, deletions=True)), view_requests(), st.data())
def test_incremental_view_equals_full_rebuild_after_every_prefix(
    log: list[LoggedEvent], request: ContentsRequest, data: st.DataObject
) -> None:
    # Every prefix of a session up to EVERY_PREFIX_UP_TO records, drawn ones beyond it.
    checked = data.draw(checked_prefixes(len(log)))
    projection = empty_projection(SESSION, request)
    for length, record in enumerate(log, start=1):
        projection = apply(projection, record)
        if length in checked:
            # The view serves the agent ADK's router would run next (`request`'s until one replies).
            expected = expected_view_request(log[:length], request)
            assert projection.view.request == expected, f"after {length}"
            rebuilt = rebuild_contents(log[:length], expected)
            assert _json(context_contents(projection)) == _json(rebuilt), f"after {length}"


@pytest.mark.core_property
@settings(deadline=None)
@given(with_conditions(core_sessions(refusals=True, deletions=True)), st.data())
def test_redelivered_records_change_nothing(log: list[LoggedEvent], data: st.DataObject) -> None:
    # After each record, sometimes deliver an earlier one (or the same one) again.
    redelivered: list[LoggedEvent] = []
    for index, record in enumerate(log):
        redelivered.append(record)
        if data.draw(st.booleans()):
            redelivered.append(log[data.draw(st.integers(0, index))])
    once = project(SESSION, log)
    assert project(SESSION, redelivered) == once
    for record in log:
        assert apply(once, record) is once


@settings(max_examples=EXAMPLES, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)), st.data())
def test_resuming_from_a_saved_projection_equals_one_pass(
    log: list[LoggedEvent], data: st.DataObject
) -> None:
    split = data.draw(st.integers(0, len(log)))
    saved = project(SESSION, log[:split])
    assert project(SESSION, log[split:], start=saved) == project(SESSION, log)


def _expected_counters(records: list[LoggedEvent]) -> dict[str, Any]:
    """The counters, computed from the records by the reference's definitions."""
    effective = [record.envelope.event for record in effective_records(records)]
    live = [event for event in drop_rewound(effective) if not is_creation(event)]
    unscoped = [event for event in live if event.isolation_scope is None]
    previous_end = previous_sliding_end(unscoped)
    latest: dict[str, float] = {}
    for event in unscoped:
        if event.invocation_id and not is_summary(event):
            latest[event.invocation_id] = max(latest.get(event.invocation_id, 0.0), event.timestamp)
    boundary = latest_summary(unscoped)
    stores = SessionStores()
    for event in effective:
        stores = append_event(stores, {}, event).stores
    return {
        "invocations_total": len(
            {e.invocation_id for e in live if e.invocation_id and not is_summary(e)}
        ),
        "invocations_since_compaction": sum(1 for t in latest.values() if t > previous_end),
        "last_prompt_tokens": recorded_prompt_token_count(
            live, agent_name="", isolation_scope=None
        ),
        # Counts are never negative, so saturating each step equals capping the sum.
        "total_prompt_tokens": min(
            MAX_TOKEN_TOTAL,
            sum(e.usage_metadata.prompt_token_count or 0 for e in effective if e.usage_metadata),
        ),
        "total_candidates_tokens": min(
            MAX_TOKEN_TOTAL,
            sum(
                e.usage_metadata.candidates_token_count or 0 for e in effective if e.usage_metadata
            ),
        ),
        "boundary": boundary.id if boundary is not None else None,
        "request_ids": {r for e in live if (r := summary_request_id(e))},
        "state": (dict(stores.app_state), dict(stores.user_state), dict(stores.session_state)),
        "live_ids": [e.id for e in live],
        "refused": refused_requests(records),
        "writer_offset": judged(records).writer_offset,
        "refused_offsets": judged(records).refused[-MAX_REFUSALS:],
    }


def _counters(projection: SessionProjection) -> dict[str, Any]:
    boundary = projection.summaries.boundary
    state = projection.state
    return {
        "invocations_total": projection.invocations.total,
        "invocations_since_compaction": projection.invocations.since_compaction,
        "last_prompt_tokens": projection.tokens.last_prompt_tokens,
        "total_prompt_tokens": projection.tokens.total_prompt_tokens,
        "total_candidates_tokens": projection.tokens.total_candidates_tokens,
        "boundary": boundary.envelope.event.id if boundary is not None else None,
        "request_ids": set(projection.summaries.request_ids),
        "state": (dict(state.app), dict(state.user), dict(state.session)),
        "live_ids": [e.id for e in live_events(projection)],
        "refused": set(projection.refused_requests),
        "writer_offset": projection.conditions.writer_offset,
        "refused_offsets": list(projection.conditions.refused),
    }


@pytest.mark.core_property
@settings(deadline=None)
@given(with_conditions(core_sessions(refusals=True, deletions=True)), st.data())
def test_counters_equal_a_rebuild_after_every_prefix(
    log: list[LoggedEvent], data: st.DataObject
) -> None:
    # Every prefix of a session up to EVERY_PREFIX_UP_TO records, drawn ones beyond it.
    checked = data.draw(checked_prefixes(len(log)))
    projection = SessionProjection(SESSION)
    for length, record in enumerate(log, start=1):
        projection = apply(projection, record)
        if length in checked:
            assert _counters(projection) == _expected_counters(log[:length]), f"after {length}"
        assert projection.last_offset == record.offset
    assert len(projection.log.records) == len(effective_records(log))


@settings(max_examples=EXAMPLES, deadline=None)
@given(sessions(refusals=True))
def test_refusals_change_nothing_but_the_request_bookkeeping(log: list[LoggedEvent]) -> None:
    without = [r for r in log if refused_request_id(r.envelope.event) is None]
    folded, plain = project(SESSION, log), project(SESSION, without)
    assert (
        replace(
            folded,
            last_offset=plain.last_offset,
            refused_requests=plain.refused_requests,
        )
        == plain
    )
    assert _json(context_contents(folded)) == _json(context_contents(plain))
    assert folded.last_offset == log[-1].offset
