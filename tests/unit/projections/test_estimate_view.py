"""The estimate view: ADK's post-invocation estimate kept, so a released session decides alone.

A projection of an app whose token trigger the pipeline runs keeps a second
view, of ADK's post-invocation request (no agent, branch or scope). The
oracles are written apart from it: the contents rebuilt from the raw records
(:func:`~projections.fold.rebuild.rebuild_contents`), and the decision's plain
rule, which reads the whole live list of a projection that never released
anything (``use_memo=False``). A projection that releases its history must
decide as that rule does, after every record, without asking for the history
to estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import decide_compaction, replay_decisions, step
from projections.contents.assembly import ContentsRequest
from projections.contents.context_view import rebuild_view, released_tools_of, view_contents
from projections.fold.projection import (
    ESTIMATE_REQUEST,
    SessionProjection,
    apply,
    configured_projection,
    empty_projection,
)
from projections.fold.rebuild import rebuild_contents
from projections.retention.log_retention import released_events, retained
from projections.retention.released_ids import ReleasedIds
from projections.retention.retained_vector import NeedsHistory
from projections.retention.state_codec import decode_state, encode_state
from schemas.compaction_request import CompactionRequest
from schemas.event import Content, Event
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    call_event,
    logged,
    response_event,
    summary_event,
    text_event,
)
from tests.support.ordered import Orderer
from tests.support.strategies import ARMED_THRESHOLD, large_session_events, session_events

#: The agent the main view is for: never the post-invocation request's.
VIEW_AGENT = "agent"


def _started(*, estimate: bool) -> SessionProjection:
    return empty_projection(SESSION, ContentsRequest(agent_name=VIEW_AGENT), estimate=estimate)


def _estimated(projection: SessionProjection) -> list[Content]:
    assert projection.estimate_view is not None
    return view_contents(projection.estimate_view)


@st.composite
def _token_configs(draw: st.DrawFn) -> CompactionConfig:
    sliding = draw(st.booleans())
    return CompactionConfig(
        compaction_interval=draw(st.integers(1, 3)) if sliding else None,
        overlap_size=draw(st.integers(0, 3)) if sliding else None,
        token_threshold=ARMED_THRESHOLD,
        event_retention_size=draw(st.integers(0, 3)),
    )


def _lockstep(
    events: list[Event], config: CompactionConfig, draw: Callable[[Any], Any], break_order: bool
) -> tuple[int, int]:
    """Fold `events` twice: released now and then, and never. Both must decide as the rule does."""
    orderer = Orderer(draw, break_order)
    kept = whole = _started(estimate=True)
    records: list[LoggedEvent] = []
    requested: CompactionRequest | None = None
    released = estimates = rebuilds = 0
    for serial, generated in enumerate(events):
        waiting = whole.in_flight is not None
        for item in orderer.incoming(generated, serial, requested, waiting):
            record = logged([item], [len(records) + 1])[0]
            rule = decide_compaction(whole, apply(whole, record), record, config, use_memo=False)
            try:
                got = step(kept, record, config)
            except NeedsHistory:  # a rewind or an id behind the release: what the projector does
                rebuilds += 1
                start = _started(estimate=True)
                got = step(
                    replay_decisions(SESSION, records, config, start=start)[0], record, config
                )
            records.append(record)
            expected = step(whole, record, config)
            assert got.request == rule == expected.request, f"at offset {record.offset}"
            requested = rule or requested
            whole, kept = expected.projection, got.projection
            if draw(st.integers(0, 2)) == 0:
                kept = retained(kept, config, step=draw(st.integers(1, 4)))
                released = max(released, released_events(kept))
            oracle = rebuild_contents(records, ESTIMATE_REQUEST)
            assert _estimated(whole) == oracle, record.offset
            try:
                assert _estimated(kept) == oracle, record.offset
            except NeedsHistory:  # a read that restores a released tool event: rebuilt
                rebuilds += 1
                kept = replay_decisions(SESSION, records, config, start=_started(estimate=True))[0]
                assert _estimated(kept) == oracle, record.offset
            estimates += kept.tokens.last_prompt_tokens is None and released > 0
    note(f"rebuilt: {rebuilds > 0}")
    return released, estimates


@settings(max_examples=100, deadline=None)
@given(session_events(max_invocations=10), _token_configs(), st.data())
def test_a_released_projection_estimates_and_decides_as_the_whole_live_list(
    events: list[Event], config: CompactionConfig, data: st.DataObject
) -> None:
    released, estimates = _lockstep(events, config, data.draw, break_order=False)
    note(f"released: {released > 0}")
    note(f"estimated after a release: {estimates > 0}")


@settings(max_examples=10, deadline=None)
@given(large_session_events(), _token_configs(), st.data())
def test_long_sessions_of_three_agents_keep_the_estimate_view_exact(
    events: list[Event], config: CompactionConfig, data: st.DataObject
) -> None:
    released, _ = _lockstep(events, config, data.draw, break_order=False)
    note(f"released: {released > 0}")


# -- hand-worked ----------------------------------------------------------------------------

#: Each invocation's question and answer, about 75 characters: a dozen estimate a few
#: hundred tokens.
_QUESTION, _ANSWER = "q" * 120, "a" * 180


def _invocation(number: int) -> list[Event]:
    base = 100.0 + 3 * number
    return [
        text_event(f"u{number}", f"inv{number}", base, _QUESTION),
        text_event(f"m{number}", f"inv{number}", base + 1, _ANSWER, author=VIEW_AGENT),
    ]


def _summarized(*, estimate: bool, config: CompactionConfig | None) -> SessionProjection:
    """Eight invocations, a summary of the first six, released down to the tail under `config`."""
    events = [event for number in range(8) for event in _invocation(number)]
    events.append(summary_event("s1", 100.0, 116.0, 125.0))
    projection = _started(estimate=estimate)
    for record in logged(events, range(len(events))):
        projection = apply(projection, record)
    return projection if config is None else retained(projection, config, step=1)


def test_after_a_release_the_next_invocation_is_checked_from_the_estimate_view() -> None:
    # No model event reports its prompt tokens, so ADK's post-invocation check estimates
    # characters/4 from the contents of its request (no agent): 2 invocations after the
    # summary, plus the summary, over a threshold of 50 tokens.
    config = CompactionConfig(token_threshold=50, event_retention_size=1)
    kept = _summarized(estimate=True, config=config)
    assert released_events(kept) > 0
    whole = _summarized(estimate=True, config=None)
    assert released_events(whole) == 0
    first = logged([text_event("u8", "inv8", 130.0, _QUESTION)], [99])[0]
    rule = decide_compaction(whole, apply(whole, first), first, config, use_memo=False)
    assert rule is not None  # the check fires: the test reaches the estimate
    assert step(kept, first, config).request == rule
    # Without the estimate view, the released projection must ask for the history.
    with pytest.raises(NeedsHistory):
        step(_summarized(estimate=False, config=config), first, config)


def test_the_estimate_view_survives_the_checkpoint_codec_and_a_deletion() -> None:
    config = CompactionConfig(token_threshold=50, event_retention_size=1)
    kept = _summarized(estimate=True, config=config)
    assert decode_state(encode_state(kept)) == kept
    without = _summarized(estimate=False, config=config)
    assert decode_state(encode_state(without)).estimate_view is None
    fresh = configured_projection(kept)
    assert fresh.estimate_view is not None
    assert view_contents(fresh.estimate_view) == []
    assert configured_projection(without).estimate_view is None


def test_views_released_together_keep_every_id_either_of_them_can_ask_for() -> None:
    # The first view holds r1 raw, answering c1, which the summary covers: a read restores
    # c1. The second holds c1 covered and nothing that names it. Released together, c1
    # stays in both and out of the released set; released alone, the second lets it go.
    c1 = call_event("c1", "inv1", 100.0, "c1")
    r1 = response_event("r1", "inv1", 101.0, "c1")
    c2 = call_event("c2", "inv1", 100.5, "c2")
    summary = summary_event("s1", 100.0, 100.5, 102.0)
    answering = rebuild_view(ESTIMATE_REQUEST, logged([c1, c2, summary, r1], [0, 1, 2, 3]))
    quiet = rebuild_view(ESTIMATE_REQUEST, logged([c1, c2, summary], [0, 1, 2]))
    assert sorted(answering.covered_tools) == sorted(quiet.covered_tools) == ["c1", "c2"]
    after_all = 10  # no covered event is at or after it: only what the views name is kept
    first, second = released_tools_of([answering, quiet], after_all, ReleasedIds())
    assert sorted(first.covered_tools) == sorted(second.covered_tools) == ["c1"]
    assert first.released == second.released
    assert first.released.has("call", "c2")
    assert not first.released.has("call", "c1")
    alone = released_tools_of([quiet], after_all, ReleasedIds())[0]
    assert not alone.covered_tools
    assert alone.released.has("call", "c1")
