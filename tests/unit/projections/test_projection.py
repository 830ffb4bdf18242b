"""Focused tests of the session projection: idempotence, rewinds, counters, requests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from projections.compaction.config import CompactionConfig
from projections.compaction.size_gate import event_json_size
from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.contents.assembly import ContentsRequest, build_contents
from projections.contents.snapshot import to_snapshot
from projections.event_kinds import summary_request_id
from projections.fold.projection import (
    SessionProjection,
    apply,
    context_contents,
    empty_projection,
    forget_request,
    live_event_sizes,
    live_events,
    note_request,
    project,
)
from projections.fold.rebuild import rebuild_contents
from projections.fold.token_usage import MAX_TOKEN_TOTAL, TokenTally, add_reported
from projections.retention.log_retention import retained
from projections.retention.retained_vector import NeedsHistory
from schemas.codec import decode_projection_snapshot, encode
from schemas.compaction_request import CompactionRequest
from schemas.errors import SessionMismatchError
from schemas.event import Content, Event, UsageMetadata, content_to_json
from schemas.keys import Offset, SessionKey, TenantId
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    TENANT,
    call_event,
    logged,
    response_event,
    rewind_event,
    summary_event,
    text_event,
)


def _log(*events: Event) -> list[LoggedEvent]:
    return logged(list(events), [10 * (i + 1) for i in range(len(events))])


def _at(offset: int, event: Event) -> LoggedEvent:
    return logged([event], [offset])[0]


def _json(contents: list[Content]) -> list[dict[str, Any]]:
    return [content_to_json(content) for content in contents]


def _texts(projection: SessionProjection) -> list[str]:
    return [
        part.text or ""
        for content in context_contents(projection)
        for part in content.parts or ()
        if part.text
    ]


def _summary(event_id: str, start: float, end: float, at: float, request_id: str) -> Event:
    return with_summary_request_id(
        summary_event(event_id, start, end, at, f"sum {event_id}"), request_id
    )


def _request(request_id: str, offsets: tuple[int, ...], decided_at: int) -> CompactionRequest:
    return CompactionRequest(
        request_id=request_id,
        tenant=TENANT,
        session_key=SESSION,
        trigger="sliding_window",
        event_offsets=tuple(Offset(o) for o in offsets),
        event_ids=tuple(f"e{o}" for o in offsets),
        start_timestamp=100.0,
        end_timestamp=101.0,
        decided_at_offset=Offset(decided_at),
    )


# -- idempotence -------------------------------------------------------------


def test_redelivered_offset_returns_the_same_projection() -> None:
    log = _log(text_event("e1", "i1", 100), text_event("e2", "i1", 101, author="agent"))
    projection = project(SESSION, log)
    assert apply(projection, log[0]) is projection
    assert apply(projection, log[1]) is projection
    assert projection.last_offset == 20


def test_an_event_of_another_session_is_refused() -> None:
    other = _at(0, text_event("e1", "i1", 100))
    envelope = other.envelope.model_copy(
        update={"session_key": SessionKey("acme/support/u1/other"), "tenant": TenantId("acme")}
    )
    with pytest.raises(SessionMismatchError, match="other") as raised:
        apply(SessionProjection(SESSION), LoggedEvent(Offset(0), envelope))
    assert raised.value.projection_key == SESSION
    assert raised.value.event_key == "acme/support/u1/other"


def test_duplicate_summary_is_ignored_and_only_its_offset_recorded() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        _summary("s1", 100, 101, 102, "r1"),
        text_event("e3", "i2", 103),
        # A retried request's second summary, wider: applied, it would hide e3.
        _summary("s2", 100, 103, 104, "r1"),
    )
    before = project(SESSION, log[:4])
    after = apply(before, log[4])
    assert after.last_offset == 50
    assert after.log == before.log
    assert _texts(after) == _texts(before) == ["sum s1", "x"]
    assert _json(context_contents(after)) == _json(rebuild_contents(log, ContentsRequest()))


def test_rewind_that_annuls_a_summary_frees_its_request_id() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i2", 101),
        _summary("s1", 100, 100, 102, "r1"),
        rewind_event("rw", "i2", 103),
        _summary("s2", 100, 100, 104, "r1"),  # the same request, summarized again
    )
    projection = project(SESSION, log[:4])
    assert dict(projection.summaries.request_ids) == {}
    projection = apply(projection, log[4])
    assert dict(projection.summaries.request_ids) == {"r1": 50}
    assert _texts(projection) == ["sum s2"]


# -- rewinds ------------------------------------------------------------------


def test_rewind_drops_the_invocation_and_everything_after() -> None:
    log = _log(
        text_event("a1", "a", 100),
        text_event("b1", "b", 101),
        text_event("b2", "b", 102, author="agent"),
        rewind_event("rw", "b", 103),
        text_event("c1", "c", 104),
    )
    projection = project(SESSION, log)
    assert [e.id for e in live_events(projection)] == ["a1", "c1"]
    assert projection.invocations.total == 2


def test_a_later_rewind_can_bring_back_what_an_earlier_one_annulled() -> None:
    # R(b)'s target first appears inside R(a)'s span: walking back from R(b)
    # jumps past R(a), so a1 is live again (reference §3.1).
    log = _log(
        text_event("a1", "a", 100),
        text_event("b1", "b", 101),
        rewind_event("ra", "a", 102),
        rewind_event("rb", "b", 103),
    )
    assert [e.id for e in live_events(project(SESSION, log[:3]))] == []
    projection = project(SESSION, log)
    assert [e.id for e in live_events(projection)] == ["a1"]
    assert _texts(projection) == ["x"]


def test_a_rewind_keeps_the_summaries_before_it_and_recounts_the_last_prompt_tokens() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        _summary("s1", 100, 101, 102, "r1"),
        text_event("e3", "i2", 103, author="agent", usage_metadata={"prompt_token_count": 70}),
        text_event("e4", "i3", 104, author="agent", usage_metadata={"prompt_token_count": 90}),
        rewind_event("rw", "i3", 105),
    )
    projection = project(SESSION, log)
    assert [e.id for e in live_events(projection)] == ["e1", "e2", "s1", "e3"]
    boundary = projection.summaries.boundary
    assert boundary is not None
    assert boundary.envelope.event.id == "s1"
    assert dict(projection.summaries.request_ids) == {"r1": 30}
    assert projection.tokens.last_prompt_tokens == 70


def test_rewind_to_an_unknown_invocation_only_records_itself() -> None:
    log = _log(text_event("a1", "a", 100), rewind_event("rw", "nope", 101))
    before = project(SESSION, log[:1])
    after = apply(before, log[1])
    assert after.log.live == before.log.live
    assert len(after.log.records) == 2
    assert after.view == before.view
    assert after.last_offset == 20


# -- counters -----------------------------------------------------------------


def test_invocations_since_compaction_follow_the_sliding_window() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i2", 102),
        text_event("e3", "i3", 104),
        summary_event("s1", 100, 103, 105),  # i3 (104) stays new
        text_event("e4", "i1", 106),  # a late event makes i1 new again
        text_event("e5", "task", 107, isolation_scope="t"),  # scoped: total only
    )
    projection = project(SESSION, log)
    assert projection.invocations.total == 4
    assert projection.invocations.since_compaction == 2
    # A summary appended later with an *earlier* end: the bar moves back.
    projection = apply(projection, _at(70, summary_event("s2", 100, 101, 108)))
    assert projection.invocations.since_compaction == 3


def test_a_summary_ending_at_zero_leaves_the_new_invocations() -> None:
    # As ADK, a compaction whose end_timestamp is 0 is ignored: i1 stays compacted.
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i2", 102),
        summary_event("s1", 100, 101, 103),
    )
    projection = project(SESSION, log)
    assert projection.invocations.since_compaction == 1
    projection = apply(projection, _at(70, summary_event("s0", 0, 0, 104)))
    assert projection.invocations.since_compaction == 1


def test_token_usage_last_count_resets_at_a_summary_and_totals_accumulate() -> None:
    usage: dict[str, Any] = {"prompt_token_count": 400, "candidates_token_count": 7}
    log = _log(
        text_event("e1", "i1", 100, author="agent", usage_metadata=usage),
        text_event("e2", "i1", 101, author="agent", usage_metadata={"prompt_token_count": 900}),
        text_event("e3", "i1", 102, isolation_scope="t", usage_metadata={"prompt_token_count": 5}),
        summary_event("s1", 100, 101, 103, usage_metadata={"prompt_token_count": 50}),
    )
    projection = project(SESSION, log[:3])
    assert projection.tokens.last_prompt_tokens == 900
    projection = apply(projection, log[3])
    assert projection.tokens.last_prompt_tokens is None
    assert projection.tokens.total_prompt_tokens == 400 + 900 + 5 + 50
    assert projection.tokens.total_candidates_tokens == 7


def test_state_is_kept_by_scope_and_temp_keys_are_never_persisted() -> None:
    delta = {"app:theme": "dark", "user:lang": "en", "n": 1, "temp:scratch": 2, "gone": None}
    log = _log(
        text_event("e1", "i1", 100, actions={"state_delta": delta}),
        text_event("e2", "i1", 101, partial=True, actions={"state_delta": {"n": 99}}),
    )
    state = project(SESSION, log).state
    assert dict(state.app) == {"theme": "dark"}
    assert dict(state.user) == {"lang": "en"}
    assert dict(state.session) == {"n": 1, "gone": None}
    assert state.read_state() == {"n": 1, "gone": None, "app:theme": "dark", "user:lang": "en"}


def test_boundary_is_the_latest_surviving_unscoped_summary() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        _summary("s1", 100, 100, 101, "r1"),
        text_event("e2", "i2", 102),
        _summary("s2", 100, 102, 103, "r2"),  # rolls s1 up
        summary_event("s3", 100, 103, 104, isolation_scope="t"),  # scoped: not a boundary
        summary_event("s4", 100, 101, 105),  # contained in s2: subsumed
    )
    projection = project(SESSION, log)
    boundary = projection.summaries.boundary
    assert boundary is not None
    assert boundary.envelope.event.id == "s2"
    assert boundary.offset == 40
    assert [s.envelope.event.id for s in projection.summaries.survivors] == ["s2"]


# -- the in-flight request ----------------------------------------------------


def test_request_is_in_flight_until_its_summary_arrives() -> None:
    log = _log(text_event("e1", "i1", 100), text_event("e2", "i1", 101, author="agent"))
    projection = note_request(project(SESSION, log), _request("r1", (10, 20), 20))
    assert projection.in_flight is not None
    assert projection.in_flight.request_id == "r1"
    assert (projection.in_flight.start_offset, projection.in_flight.end_offset) == (10, 20)
    summary = _at(30, _summary("s1", 100, 101, 102, "r1"))
    assert apply(projection, summary).in_flight is None


def test_a_summary_of_another_request_leaves_the_request_in_flight() -> None:
    projection = note_request(SessionProjection(SESSION), _request("r1", (10,), 10))
    other = _at(30, _summary("s1", 100, 101, 102, "r0"))
    assert apply(projection, other).in_flight == projection.in_flight


def test_a_retry_replaces_the_in_flight_request_and_forget_clears_it() -> None:
    first = note_request(SessionProjection(SESSION), _request("r1", (10,), 10))
    retry = note_request(first, _request("r1", (10,), 10).model_copy(update={"attempt": 2}))
    assert retry.in_flight is not None
    assert retry.in_flight.attempt == 2
    assert forget_request(retry, "r0") is retry
    assert forget_request(retry, "r1").in_flight is None


def test_a_request_already_answered_is_not_noted() -> None:
    projection = project(SESSION, _log(_summary("s1", 100, 101, 102, "r1")))
    assert note_request(projection, _request("r1", (10,), 10)) is projection


def test_a_request_of_another_session_is_refused() -> None:
    request = _request("r1", (10,), 10).model_copy(
        update={"session_key": SessionKey("acme/support/u1/other")}
    )
    with pytest.raises(SessionMismatchError) as raised:
        note_request(SessionProjection(SESSION), request)
    assert raised.value.projection_key == SESSION
    assert raised.value.event_key == "acme/support/u1/other"


def test_a_rewind_keeps_the_request_in_flight() -> None:
    log = logged(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "i2", 101.0),
            rewind_event("rw", "i2", 102.0),
        ],
        [10, 20, 30],
    )
    waiting = note_request(project(SESSION, log[:2]), _request("r1", (10,), 20))
    rewound = apply(waiting, log[2])
    assert [event.id for event in live_events(rewound)] == ["e1"]
    assert rewound.in_flight is not None
    assert rewound.in_flight.request_id == "r1"
    assert rewound.in_flight == waiting.in_flight


def test_an_event_that_is_not_live_is_measured_by_the_size_gate() -> None:
    projection = project(SESSION, logged([text_event("e1", "i1", 100.0)], [10]))
    stranger = text_event("e9", "i1", 101.0, "a longer text than e1's")
    assert live_event_sizes(projection)(stranger) == event_json_size(stranger)


# -- refusals -----------------------------------------------------------------


def _refusal(request_id: str, event_id: str = "no1", invocation_id: str = "") -> Event:
    refusal = refusal_event(request_id, "summarizer gave up", event_id=event_id, timestamp=150.0)
    return refusal.model_copy(update={"invocation_id": invocation_id})


def test_a_refusal_of_the_in_flight_request_ends_the_wait() -> None:
    waiting = note_request(
        project(SESSION, _log(text_event("e1", "i1", 100))), _request("r1", (10,), 10)
    )
    refused = apply(waiting, _at(20, _refusal("r1")))
    assert refused.in_flight is None
    assert set(refused.refused_requests) == {"r1"}
    assert refused.last_offset == 20
    assert replace(
        refused, last_offset=Offset(10), refused_requests=waiting.refused_requests
    ) == replace(waiting, in_flight=None)


def test_a_refusal_of_another_request_is_remembered_and_the_wait_goes_on() -> None:
    waiting = note_request(SessionProjection(SESSION), _request("r1", (10,), 10))
    refused = apply(waiting, _at(20, _refusal("r0")))
    assert refused.in_flight == waiting.in_flight
    assert set(refused.refused_requests) == {"r0"}


def test_a_refusal_is_never_stored_nor_seen_in_the_context() -> None:
    events = [
        text_event("e1", "i1", 100),
        _refusal("r1", invocation_id="i9"),
        text_event("e2", "i2", 101),
    ]
    with_refusal = project(SESSION, _log(*events))
    without = project(SESSION, [*_log(events[0]), _at(30, events[2])])
    assert replace(with_refusal, refused_requests=without.refused_requests) == without
    assert [event.id for event in live_events(with_refusal)] == ["e1", "e2"]
    assert with_refusal.invocations.total == 2


def test_a_refused_request_stays_refused_across_a_rewind_and_is_not_noted_again() -> None:
    log = _log(text_event("e1", "i1", 100), _refusal("r1"), rewind_event("rw", "i1", 102))
    projection = project(SESSION, log)
    assert set(projection.refused_requests) == {"r1"}
    assert note_request(projection, _request("r1", (10,), 10)) is projection
    assert note_request(projection, _request("r2", (10,), 10)).in_flight is not None


def test_a_redelivered_refusal_changes_nothing() -> None:
    refused = project(SESSION, [_at(20, _refusal("r1"))])
    assert apply(refused, _at(20, _refusal("r2"))) is refused


# -- token totals --------------------------------------------------------------


def _usage(event_id: str, prompt: int, candidates: int) -> Event:
    usage = {"prompt_token_count": prompt, "candidates_token_count": candidates}
    return text_event(event_id, "i1", 100, author="agent", usage_metadata=usage)


#: The largest count the event schema accepts (int32); the totals are int64.
COUNT = 2**31 - 1


def _near_the_top(prompt_gap: int, candidates_gap: int) -> SessionProjection:
    """A projection whose totals are that far below int64's maximum (as after ~2**32 reports)."""
    tokens = TokenTally(
        total_prompt_tokens=MAX_TOKEN_TOTAL - prompt_gap,
        total_candidates_tokens=MAX_TOKEN_TOTAL - candidates_gap,
    )
    return replace(SessionProjection(SESSION), tokens=tokens)


def test_token_totals_saturate_at_the_largest_int64() -> None:
    start = _near_the_top(10, COUNT + 1)
    projection = project(SESSION, _log(_usage("a", COUNT, COUNT), _usage("b", 7, 0)), start=start)
    assert projection.tokens.total_prompt_tokens == MAX_TOKEN_TOTAL == 2**63 - 1
    assert projection.tokens.total_candidates_tokens == MAX_TOKEN_TOTAL - 1  # not reached
    assert projection.tokens.last_prompt_tokens == 7
    tally = add_reported(TokenTally(total_prompt_tokens=MAX_TOKEN_TOTAL), _usage("c", 1, 1))
    assert tally.total_prompt_tokens == MAX_TOKEN_TOTAL
    assert tally.total_candidates_tokens == 1


def test_saturated_totals_encode_in_a_snapshot() -> None:
    projection = project(SESSION, _log(_usage("a", COUNT, COUNT)), start=_near_the_top(1, 1))
    snapshot = to_snapshot(projection)
    assert decode_projection_snapshot(encode(snapshot)) == snapshot
    assert snapshot.token_usage.total_prompt_tokens == MAX_TOKEN_TOTAL
    assert snapshot.token_usage.total_candidates_tokens == MAX_TOKEN_TOTAL


# -- the incremental view -----------------------------------------------------


def _assert_view_matches_rebuild(log: list[LoggedEvent], request: ContentsRequest) -> None:
    projection = project(SESSION, log, start=empty_projection(SESSION, request))
    assert _json(context_contents(projection)) == _json(rebuild_contents(log, request))


def test_view_restores_a_compacted_call_with_its_sibling_response() -> None:
    parallel = Event.model_validate(
        {
            "id": "e2",
            "invocation_id": "i1",
            "author": "agent",
            "timestamp": 101,
            "content": {
                "role": "model",
                "parts": [
                    {"function_call": {"id": "c1", "name": "tool", "args": {}}},
                    {"function_call": {"id": "c2", "name": "tool", "args": {}}},
                ],
            },
        }
    )
    log = _log(
        text_event("e1", "i1", 100),
        parallel,
        response_event("e3", "i1", 102, "c1"),
        summary_event("s1", 100, 102, 103),
        response_event("e4", "i2", 104, "c2"),  # answers c2 after the summary
    )
    request = ContentsRequest(agent_name="agent")
    projection = project(SESSION, log, start=empty_projection(SESSION, request))
    contents = _json(context_contents(projection))
    assert contents == _json(rebuild_contents(log, request))
    calls = [p for c in contents for p in c["parts"] if "functionCall" in p]
    responses = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    assert [p["functionCall"]["id"] for p in calls] == ["c1", "c2"]
    assert sorted(p["functionResponse"]["id"] for p in responses) == ["c1", "c2"]


def test_view_hides_progress_once_its_call_is_recorded_even_out_of_sight() -> None:
    # Progress names call c9 before the call exists; the call itself is in a
    # scope this view does not see, yet it is recorded, so the progress is hidden.
    request = ContentsRequest(agent_name="root")
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="inner", branch="root.wf@c9"),
        call_event("e3", "i1", 102, "c9", isolation_scope="t"),
    )
    before_call = project(SESSION, log[:2], empty_projection(SESSION, request))
    assert len(context_contents(before_call)) == 2
    projection = project(SESSION, log, start=empty_projection(SESSION, request))
    assert _json(context_contents(projection)) == _json(rebuild_contents(log, request))
    assert len(context_contents(projection)) == 1


def test_view_hides_a_late_event_inside_a_summary_range() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        summary_event("s1", 100, 101, 102),
        text_event("late", "i1", 100.5, "late"),
        text_event("e3", "i2", 103, "new"),
    )
    projection = project(SESSION, log)
    assert _texts(projection) == ["sum", "new"]
    assert [r.envelope.event.id for r in projection.view.raw] == ["e3"]
    _assert_view_matches_rebuild(log, ContentsRequest())


def test_view_drops_raw_events_a_new_summary_covers() -> None:
    log = _log(
        text_event("e1", "i1", 100),
        call_event("e2", "i1", 101, "c1"),
        response_event("e3", "i1", 102, "c1"),
        text_event("e4", "i2", 103),
    )
    projection = project(SESSION, log)
    assert len(projection.view.raw) == 4
    projection = apply(projection, _at(50, summary_event("s1", 100, 102, 104)))
    assert [r.envelope.event.id for r in projection.view.raw] == ["e4"]
    assert sorted(projection.view.covered_tools) == ["c1"]


def test_view_serves_default_mode_only_and_other_requests_are_built_on_demand() -> None:
    with pytest.raises(ValueError, match="include_contents"):
        empty_projection(SESSION, ContentsRequest(include_contents="none"))
    log = _log(text_event("e1", "i1", 100), text_event("e2", "i1", 101, author="helper"))
    projection = project(SESSION, log)
    other = ContentsRequest(agent_name="root", include_contents="none")
    events = [record.envelope.event for record in log]
    assert _json(context_contents(projection, other)) == _json(build_contents(events, other))


# -- the request id a summary carries -------------------------------------------


def test_summary_request_id_round_trip_and_malformed_metadata() -> None:
    summary = summary_event("s1", 1, 2, 3, custom_metadata={"other": 1})
    named = with_summary_request_id(summary, "r1")
    assert summary_request_id(named) == "r1"
    assert named.custom_metadata == {"other": 1, "ctxstream": {"compaction_request_id": "r1"}}
    assert summary_request_id(summary) is None
    bad = summary_event("s2", 1, 2, 3, custom_metadata={"ctxstream": {"compaction_request_id": 7}})
    assert summary_request_id(bad) is None
    not_a_summary = with_summary_request_id(text_event("e1", "i1", 1), "r1")
    assert summary_request_id(not_a_summary) is None
    with pytest.raises(ValueError, match="empty"):
        with_summary_request_id(summary, "")


def test_a_partial_event_is_not_stored_and_never_reaches_the_context() -> None:
    chunk = text_event("p1", "inv1", 2.0, author="agent", text="Hel").model_copy(
        update={"partial": True}
    )
    log = _log(text_event("u1", "inv1", 1.0, text="hi"), chunk)
    projection = project(SESSION, log)
    assert _texts(projection) == ["hi"]
    assert [event.id for event in live_events(projection)] == ["u1"]
    assert projection.last_offset == 20
    assert _json(context_contents(projection)) == _json(rebuild_contents(log, ContentsRequest()))


def test_an_equal_event_at_a_new_offset_is_a_retry_and_ignored() -> None:
    first = text_event("u1", "inv1", 1.0, text="hi")
    retry = first.model_copy()
    changed = first.model_copy(update={"timestamp": 1.5})
    log = _log(first, retry)
    projection = project(SESSION, log)
    assert _texts(projection) == ["hi"]
    assert projection.last_offset == 20
    assert _json(rebuild_contents(log, ContentsRequest())) == _json(context_contents(projection))
    # Same id, another field: a different event, stored as ADK would.
    assert _texts(apply(projection, _at(30, changed))) == ["hi", "hi"]


def test_an_invocation_at_time_zero_or_at_the_summarys_end_is_not_new() -> None:
    # New means a latest timestamp above the newest summary's end (0.0 without one).
    at_zero = project(SESSION, _log(text_event("e0", "i0", 0.0)))
    assert at_zero.invocations.total == 1
    assert at_zero.invocations.since_compaction == 0
    assert dict(at_zero.invocations.latest_timestamps) == {"i0": 0.0}
    early = project(SESSION, _log(text_event("e1", "i1", 0.5)))
    assert dict(early.invocations.latest_timestamps) == {"i1": 0.5}
    at_end = project(
        SESSION,
        _log(
            text_event("e1", "i1", 100),
            summary_event("s1", 100, 105, 106),
            text_event("e2", "i2", 105),
        ),
    )
    assert at_end.invocations.since_compaction == 0


def test_a_rewind_to_an_unknown_invocation_still_adds_its_reported_tokens() -> None:
    # Only the rewind itself goes; its report counts like any applied event's.
    rewind = rewind_event("rw", "z", 101.0).model_copy(
        update={"usage_metadata": UsageMetadata(prompt_token_count=50)}
    )
    first = text_event("e1", "i1", 100, author="agent", usage_metadata={"prompt_token_count": 400})
    projection = project(SESSION, _log(first, rewind))
    assert [event.id for event in live_events(projection)] == ["e1"]
    assert projection.tokens.total_prompt_tokens == 450


def test_a_call_that_earlier_progress_named_is_placed_from_the_whole_live_list() -> None:
    # One agent throughout: progress on "root.tool@k1" awaits call k1; the call then
    # arrives for the same view, which places it again from every live record.
    request = ContentsRequest(agent_name="agent")
    log = _log(
        text_event("q", "i1", 100.0, "question"),
        text_event("p1", "i1", 101.0, "progress", author="agent", branch="root.tool@k1"),
        call_event("c1", "i1", 102.0, "k1"),
        response_event("r1", "i1", 103.0, "k1"),
    )
    projection = project(SESSION, log, start=empty_projection(SESSION, request))
    assert projection.view.request == request
    assert _json(context_contents(projection)) == _json(rebuild_contents(log, request))
    assert len(context_contents(projection)) == 3  # the progress is hidden once k1 is recorded


def test_an_event_the_pipeline_authors_is_stored_unless_it_forks_or_refuses() -> None:
    # Author "ctxstream" alone makes no fork record: the event is part of the session.
    log = _log(
        text_event("q", "i1", 100.0, "question"),
        text_event("n", "i1", 101.0, "note", author="ctxstream"),
    )
    projection = project(SESSION, log)
    assert [event.id for event in live_events(projection)] == ["q", "n"]
    assert projection.last_offset == log[-1].offset
    assert projection.forked_at is None
    assert _json(context_contents(projection)) == _json(
        rebuild_contents(log, projection.view.request)
    )


def test_an_out_of_order_event_after_release_names_the_whole_live_list() -> None:
    events = [text_event(f"e{i}", f"inv{i // 2}", 100.0 + i) for i in range(20)]
    events += [summary_event("s1", 100.0, 115.0, 130.0), text_event("t", "inv10", 131.0)]
    records = logged(events, list(range(len(events))))
    config = CompactionConfig(compaction_interval=2, overlap_size=0)
    kept = retained(project(SESSION, records), config, step=1)
    assert kept.log.live.first > 0
    late = _at(100, text_event("late", "inv10", 120.0))  # older than the newest event
    with pytest.raises(NeedsHistory) as raised:
        apply(kept, late)
    assert raised.value.what == "the whole live list of a session out of order"
