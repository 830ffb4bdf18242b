"""The projector's compaction decision: when it fires, what it names, never two in flight."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import decide_compaction, replay_decisions, step
from projections.compaction.gate_memo import GateBound, GateMemo
from projections.compaction.hooks import answered_model_call, completes_invocation, next_model_call
from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.compaction.token_count import estimated_prompt_token_count
from projections.compaction.token_threshold import TokenHook
from projections.compaction.window_request import compaction_request
from projections.fold.projection import SessionProjection, apply, live_events, project
from schemas.codec import MAX_RECORD_BYTES, encode
from schemas.compaction_request import MAX_SEED_TEXT_CHARS, compaction_request_id
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    call_event,
    event,
    logged,
    response_event,
    summary_event,
    text_event,
)
from tests.support.strategies import sessions

SLIDING = CompactionConfig(compaction_interval=2, overlap_size=0)
TOKEN = CompactionConfig(token_threshold=100, event_retention_size=1)
TOKEN_NO_RETENTION = CompactionConfig(token_threshold=100, event_retention_size=0)
BOTH = CompactionConfig(
    compaction_interval=2, overlap_size=1, token_threshold=100, event_retention_size=1
)


def _invocations(count: int, *, tokens: int | None = None) -> list[Event]:
    events: list[Event] = []
    for number in range(1, count + 1):
        base = 100.0 + 10 * number
        events.append(text_event(f"u{number}", f"inv{number}", base, f"q{number}"))
        usage = {"usage_metadata": {"prompt_token_count": tokens}} if tokens else {}
        events.append(
            text_event(
                f"a{number}", f"inv{number}", base + 1, f"a{number}", author="agent", **usage
            )
        )
    return events


def _log(events: list[Event]) -> list[LoggedEvent]:
    return logged(events, [10 * position for position in range(len(events))])


def test_the_first_event_of_a_new_invocation_completes_the_previous_one() -> None:
    log = _log(_invocations(2))
    before = project(SESSION, log[:2])
    assert completes_invocation(before, log[2])  # first event of inv2
    assert not completes_invocation(before, log[1])  # inv1 again
    assert not completes_invocation(SessionProjection(SESSION), log[0])  # nothing before


def test_sliding_window_is_decided_when_the_third_invocation_starts() -> None:
    log = _log(_invocations(3))
    _, requests = replay_decisions(SESSION, log, SLIDING)
    assert len(requests) == 1
    request = requests[0]
    assert request.trigger == "sliding_window"
    assert request.event_offsets == (0, 10, 20, 30)
    assert request.event_ids == ("u1", "a1", "u2", "a2")
    assert (request.start_timestamp, request.end_timestamp) == (110.0, 121.0)
    assert request.decided_at_offset == 40
    assert request.request_id == compaction_request_id(
        SESSION, "sliding_window", (Offset(0), Offset(10), Offset(20), Offset(30))
    )
    assert request.seed is None
    assert request.attempt == 1


def test_the_decision_is_the_post_invocation_hook_on_the_projection_before() -> None:
    log = _log(_invocations(3))
    before = project(SESSION, log[:4])
    window = select_post_invocation_window(live_events(before), SLIDING)
    assert window is not None
    request = decide_compaction(before, apply(before, log[4]), log[4], SLIDING)
    assert request is not None
    assert request.event_ids == window.event_ids


def test_never_two_in_flight_and_a_summary_frees_the_next() -> None:
    log = _log(_invocations(5))
    projection, requests = replay_decisions(SESSION, log, SLIDING)
    assert len(requests) == 1  # inv3 and inv5 start while the first is in flight
    assert projection.in_flight is not None
    first = requests[0]
    summary = with_summary_request_id(
        summary_event("s1", first.start_timestamp, first.end_timestamp, 160.0), first.request_id
    )
    more = _log([*_invocations(5), summary, *_invocations(8)[10:]])
    _, requests = replay_decisions(SESSION, more, SLIDING)
    assert [r.trigger for r in requests] == ["sliding_window", "sliding_window"]
    assert requests[1].event_ids[0] == "u3"  # after the summary's end


def test_a_reply_over_the_threshold_is_compacted_when_its_invocation_completes() -> None:
    # ADK checks after the invocation (and before the next model call), never on
    # the response that reports the count: vectors 027-032 put the summary after
    # the reply, 033 after the tool's response, never after the reporting event.
    log = _log(_invocations(2, tokens=150))
    projection = SessionProjection(SESSION)
    decided = []
    for record in log:
        folded = step(projection, record, TOKEN)
        projection = folded.projection
        if folded.request is not None:
            decided.append((record.offset, folded.chosen_before, folded.request.event_ids))
    # u2 (offset 20) completes inv1, whose reply a1 reported 150 >= 100; the hook
    # ran on u1, a1 (chosen before u2), retention 1 keeps a1.
    assert decided == [(20, True, ("u1",))]


def _tool_loop(prompt_tokens: int, **response_fields: Any) -> list[Event]:
    """u1, the agent's call reporting `prompt_tokens`, the tool's response, the reply."""
    usage = {"usage_metadata": {"prompt_token_count": prompt_tokens}}
    return [
        text_event("u1", "inv1", 110.0, "look up the tides"),
        call_event("c1", "inv1", 111.0, "k1", "lookup", **usage),
        response_event("r1", "inv1", 112.0, "k1", "lookup", **response_fields),
        text_event("a1", "inv1", 113.0, "the moon", author="agent", **usage),
    ]


def test_a_tool_loop_is_checked_after_the_tools_respond() -> None:
    # Vector 059: ADK's check before the second model call sees the tool's
    # response; the call that reported the count decides nothing.
    projection = SessionProjection(SESSION)
    decided = []
    for record in _log(_tool_loop(1_000)):
        folded = step(projection, record, TOKEN_NO_RETENTION)
        projection = folded.projection
        if folded.request is not None:
            decided.append((record.offset, folded.chosen_before, folded.request.event_ids))
    assert decided == [(20, False, ("u1", "c1", "r1"))]


@pytest.mark.parametrize(
    "fields",
    [
        {"actions": {"skip_summarization": True}},
        {"long_running_tool_ids": ["k1"]},
        {"actions": {"requested_tool_confirmations": {"k1": {"hint": "ok?"}}}},
        {"actions": {"requested_auth_configs": {"k1": {}}}},
        {"error_code": "TOOL_FAILED"},
    ],
    ids=["skip-summarization", "long-running", "confirmation", "credentials", "error"],
)
def test_no_check_after_a_response_that_ends_the_agents_turn(fields: dict[str, Any]) -> None:
    # A final response (ADK's Event.is_final_response) or one that pauses for the
    # user: ADK calls no model after it, so nothing is checked before one.
    response = _tool_loop(1_000, **fields)[2]
    assert next_model_call(response) is None
    _, requests = replay_decisions(SESSION, _log(_tool_loop(1_000, **fields)[:3]), TOKEN)
    assert requests == []


def test_the_check_after_a_transfer_is_the_target_agents() -> None:
    # Vector 046: the coordinator's count is not the researcher's.
    transfer = response_event(
        "r1",
        "inv1",
        112.0,
        "k1",
        "transfer_to_agent",
        author="coordinator",
        actions={"transfer_to_agent": "researcher"},
    )
    assert next_model_call(transfer) == TokenHook(agent_name="researcher")
    assert next_model_call(_tool_loop(1)[2]) == TokenHook(agent_name="agent")
    assert next_model_call(_tool_loop(1)[1]) is None  # a call: the tool runs next
    assert next_model_call(_tool_loop(1)[3]) is None  # a final reply


def test_the_count_read_before_a_model_call_is_that_agents_own() -> None:
    # Another agent's count over the threshold does not arm this agent's check
    # (reference §5.1), and this agent's count below it skips the selection.
    config = CompactionConfig(token_threshold=500, event_retention_size=0)
    events = _tool_loop(5_000)
    other = events[1].model_copy(update={"author": "helper"})
    log = _log([events[0], other, events[2]])
    before = project(SESSION, log[:2])
    # "agent" has no count: the estimate of u1 and helper's call, quoted as
    # another agent's message, is what the check reads.
    estimate = estimated_prompt_token_count(
        live_events(before), agent_name="agent", current_branch=None, isolation_scope=None
    )
    assert estimate is not None
    assert 0 < estimate < 500
    _, requests = replay_decisions(SESSION, log, config)
    assert requests == []
    _, requests = replay_decisions(SESSION, _log(_tool_loop(499)[:3]), config)
    assert requests == []
    _, requests = replay_decisions(SESSION, _log(_tool_loop(500)[:3]), config)
    assert [request.decided_at_offset for request in requests] == [20]


def test_the_first_model_call_is_checked_on_the_events_before_its_response() -> None:
    # Vector 045: the user's message names no agent; the check before the first
    # model call is evaluated when the response shows which agent made it.
    question = text_event("u1", "inv1", 110.0, "q" * 600)
    reply = text_event("a1", "inv1", 111.0, "a", author="agent")
    before = project(SESSION, _log([question]))
    assert answered_model_call(before, reply) == TokenHook(agent_name="agent")
    folded = step(before, _log([question, reply])[1], TOKEN_NO_RETENTION)
    assert folded.request is not None
    assert folded.chosen_before
    assert folded.request.event_ids == ("u1",)  # 600 characters // 4 = 150 >= 100
    assert folded.request.decided_at_offset == 10


def test_a_response_after_a_checked_tool_response_is_not_checked_again() -> None:
    events = _tool_loop(1)
    before = project(SESSION, _log(events[:3]))
    assert answered_model_call(before, events[3]) is None  # checked after r1
    assert answered_model_call(project(SESSION, _log(events[:1])), events[1]) is not None


def test_without_usage_the_post_invocation_hook_reads_the_estimate() -> None:
    # Vectors 044, 060: no model call reports usage; ADK compares characters / 4.
    events = [
        text_event("u1", "inv1", 110.0, "q1"),
        text_event("a1", "inv1", 111.0, "a" * 600, author="agent"),
        text_event("u2", "inv2", 120.0, "q2"),
    ]
    projection = SessionProjection(SESSION)
    decided = []
    for record in _log(events):
        folded = step(projection, record, TOKEN)
        projection = folded.projection
        if folded.request is not None:
            decided.append((record.offset, folded.chosen_before, folded.request.event_ids))
    assert decided == [(20, True, ("u1",))]


def test_token_threshold_below_the_bar_decides_nothing() -> None:
    _, requests = replay_decisions(SESSION, _log(_invocations(4, tokens=99)), TOKEN)
    assert requests == []


def test_token_threshold_wins_over_the_sliding_window() -> None:
    log = _log(_invocations(3, tokens=150))
    _, requests = replay_decisions(SESSION, log, BOTH)
    assert requests
    assert requests[0].trigger == "token_threshold"


def test_redelivered_records_decide_nothing() -> None:
    log = _log(_invocations(3))
    projection = project(SESSION, log[:4])
    folded = step(projection, log[3], SLIDING)
    assert folded.request is None
    assert folded.projection is projection


@settings(max_examples=60, deadline=None)
@given(sessions(), st.sampled_from([SLIDING, TOKEN, BOTH]))
def test_requests_name_live_offsets_and_never_overlap_in_flight(
    log: list[LoggedEvent], config: CompactionConfig
) -> None:
    projection = SessionProjection(SESSION)
    for record in log:
        folded = step(projection, record, config)
        if folded.request is not None:
            assert apply(projection, record).in_flight is None  # none left in flight
            offsets = {r.offset for r in projection.log.records} | {record.offset}
            assert set(folded.request.event_offsets) <= offsets
            assert folded.projection.in_flight is not None
            assert folded.projection.in_flight.request_id == folded.request.request_id
        projection = folded.projection


@settings(max_examples=40, deadline=None)
@given(sessions(), st.sampled_from([SLIDING, TOKEN, BOTH]))
def test_a_redelivered_log_decides_the_same_requests(
    log: list[LoggedEvent], config: CompactionConfig
) -> None:
    once = replay_decisions(SESSION, log, config)
    redelivered = [r for r in log for _ in range(2)]
    assert replay_decisions(SESSION, redelivered, config)[1] == once[1]


# -- refusals --------------------------------------------------------------------------


def _refusal(request_id: str, serial: int) -> Event:
    return refusal_event(request_id, "gave up", event_id=f"no{serial}", timestamp=999.0)


def test_a_refusal_ends_the_wait_and_the_next_trigger_decides_a_new_window() -> None:
    events = _invocations(5)
    _, requests = replay_decisions(SESSION, _log(events), SLIDING)
    first = requests[0]  # decided by inv3's first event, in flight while inv4 starts
    refused = _log([*events[:6], _refusal(first.request_id, 1), *events[6:]])
    projection, requests = replay_decisions(SESSION, refused, SLIDING)
    assert len(requests) == 2
    assert requests[0] == first
    # inv4's first event completes inv3: the window now reaches it.
    assert requests[1].event_ids == ("u1", "a1", "u2", "a2", "u3", "a3")
    assert requests[1].decided_at_offset == 70  # u4, after the refusal at 60
    assert set(projection.refused_requests) == {first.request_id}
    assert projection.in_flight is not None
    assert projection.in_flight.request_id == requests[1].request_id


def test_a_refused_window_is_never_asked_for_again() -> None:
    events = _invocations(3)
    log = _log(events)
    _, requests = replay_decisions(SESSION, log, SLIDING)
    (request,) = requests
    # The refusal arrives before the window is even chosen (a replay of a log
    # in which it was refused): choosing the same window emits nothing.
    refused = [log[0], *logged([_refusal(request.request_id, 1)], [1]), *log[1:]]
    projection, requests = replay_decisions(SESSION, refused, SLIDING)
    assert requests == []
    assert projection.in_flight is None
    # The next invocation widens the window: a new request.
    more = [*refused, *logged(_invocations(4)[6:], [100, 110])]
    _, requests = replay_decisions(SESSION, more, SLIDING)
    assert len(requests) == 1
    assert requests[0].request_id != request.request_id


def test_a_window_a_live_summary_already_answers_is_not_asked_for_again() -> None:
    # inv3's partial chunk completes inv2 and decides inv1..inv2; the chunk is not
    # stored, so inv3's first stored event completes inv2 again and chooses the same
    # window. By then a summary naming the request is live (ending at 0.0, which the
    # sliding window ignores, so inv1 and inv2 stay new): nothing is emitted.
    chunk = text_event("p3", "inv3", 130.0, "par", author="agent", partial=True)
    log = _log([*_invocations(2), chunk])
    _, requests = replay_decisions(SESSION, log, SLIDING)
    (request,) = requests
    assert request.event_ids == ("u1", "a1", "u2", "a2")
    summary = with_summary_request_id(summary_event("s1", 0.0, 0.0, 131.0), request.request_id)
    question = text_event("u3", "inv3", 132.0, "q3")
    projection, requests = replay_decisions(
        SESSION, [*log, *logged([summary, question], [50, 60])], SLIDING
    )
    assert requests == [request]
    assert projection.in_flight is None
    assert projection.last_offset == 60


def test_a_refusal_is_not_a_trigger() -> None:
    log = _log(_invocations(2))
    before = project(SESSION, log)
    refusal = logged([_refusal("r0", 1).model_copy(update={"invocation_id": "inv9"})], [100])[0]
    assert completes_invocation(before, refusal)  # it names a new invocation id ...
    assert decide_compaction(before, apply(before, refusal), refusal, SLIDING) is None  # ... no


def _seeded_session(summary_text: str) -> list[LoggedEvent]:
    """inv1, its summary, then invocations whose replies report tokens over the threshold."""
    first = _invocations(1)
    summary = summary_event("s1", 111.0, 112.0, 113.0, summary_text)
    later = [
        text_event("u2", "inv2", 120.0, "q2"),
        text_event(
            "a2", "inv2", 121.0, "a2", author="agent", usage_metadata={"prompt_token_count": 500}
        ),
        text_event("u3", "inv3", 130.0, "q3"),
        text_event(
            "a3", "inv3", 131.0, "a3", author="agent", usage_metadata={"prompt_token_count": 900}
        ),
    ]
    return _log([*first, summary, *later])


def test_a_token_window_rolls_the_previous_summary_in_as_its_seed() -> None:
    _, requests = replay_decisions(SESSION, _seeded_session("an earlier summary"), TOKEN)
    assert requests
    seed = requests[0].seed
    assert seed is not None
    assert seed.content.parts is not None
    assert seed.content.parts[0].text == "an earlier summary"


def test_a_seed_no_request_can_carry_decides_nothing_instead_of_raising() -> None:
    # Only a summary the tenant forged can be this long: the summarizer clips its own.
    forged = "x" * (MAX_SEED_TEXT_CHARS + 1)
    projection, requests = replay_decisions(SESSION, _seeded_session(forged), TOKEN)
    assert requests == []
    assert projection.in_flight is None
    assert projection.last_offset == 60  # every record folded


def _session_seeded_with_data(data_chars: int) -> list[LoggedEvent]:
    """inv1, its summary holding `data_chars` characters of inline data, inv2 over 100 tokens."""
    content = {
        "role": "model",
        "parts": [
            {"text": "sum"},
            {"inlineData": {"mimeType": "image/png", "data": "A" * data_chars}},
        ],
    }
    compaction = {"start_timestamp": 111.0, "end_timestamp": 112.0, "compacted_content": content}
    summary = event("s1", "user", 113.0, inv="cmp-s1", actions={"compaction": compaction})
    later = [
        text_event("u2", "inv2", 120.0, "q2"),
        text_event(
            "a2", "inv2", 121.0, "a2", author="agent", usage_metadata={"prompt_token_count": 500}
        ),
        text_event("u3", "inv3", 130.0, "q3"),
    ]
    return _log([*_invocations(1), summary, *later])


def test_a_request_of_exactly_one_record_is_decided_and_one_byte_more_is_not() -> None:
    # u3 completes inv2 at 500 tokens: the token window [seed, u2]. Each character of the
    # seed's inline data adds one byte to the encoded request, so the data can be sized
    # to make the request exactly MAX_RECORD_BYTES.
    _, requests = replay_decisions(SESSION, _session_seeded_with_data(4), TOKEN)
    (small,) = requests
    assert small.event_ids == ("u2",)
    fill = 4 + MAX_RECORD_BYTES - len(encode(small))
    _, requests = replay_decisions(SESSION, _session_seeded_with_data(fill), TOKEN)
    (at_limit,) = requests
    assert at_limit.event_ids == ("u2",)
    assert len(encode(at_limit)) == MAX_RECORD_BYTES
    _, requests = replay_decisions(SESSION, _session_seeded_with_data(fill + 1), TOKEN)
    assert requests == []


# -- what a fold remembers: the gate memo only after a selection found nothing ------------


def _agent_event(event_id: str, timestamp: float, **fields: Any) -> Event:
    """An event of the agent in invocation inv1."""
    return Event.model_validate(
        {"id": event_id, "invocation_id": "inv1", "author": "agent", "timestamp": timestamp}
        | fields
    )


def _model_error(event_id: str, timestamp: float, prompt_tokens: int | None = None) -> Event:
    """A model call of the agent that failed, reporting `prompt_tokens` if given."""
    usage = (
        {} if prompt_tokens is None else {"usage_metadata": {"prompt_token_count": prompt_tokens}}
    )
    return _agent_event(event_id, timestamp, error_code="UNAVAILABLE", **usage)


def _memo_after(events: list[Event], config: CompactionConfig) -> object:
    projection, requests = replay_decisions(SESSION, logged(events, range(len(events))), config)
    assert requests == []
    return projection.gate_memo


def test_a_token_check_without_the_token_trigger_remembers_nothing() -> None:
    # Only the sliding window is configured and no invocation completed: nothing selected.
    quiet = Event.model_validate(
        {"id": "u", "invocation_id": "inv1", "author": "user", "timestamp": 100.0}
    )
    assert _memo_after([quiet, _model_error("x", 100.5)], SLIDING) is None


def _big_summary() -> Event:
    """A summary over [200, 300] of 338 characters."""
    return summary_event("s", 200.0, 300.0, 301.0, text="p" * 300)


def test_a_token_check_below_its_recorded_count_remembers_nothing() -> None:
    # The tool's response carries a count of 1, below the threshold: the check before
    # the next model call selects nothing, so the fold keeps no memo.
    answer = _agent_event(
        "r",
        250.0,
        content={"role": "user", "parts": [{"functionResponse": {"id": "c", "name": "t"}}]},
        usage_metadata={"prompt_token_count": 1},
    )
    assert _memo_after([_big_summary(), answer], TOKEN) is None


def test_a_token_check_the_memo_answers_keeps_the_spent_budget() -> None:
    # The first model error selects (no count since the summary) and remembers the token
    # bound: floor 200, budget 338 - (338 - 27) = 27. The user's empty content at 250
    # spends 2; the next check is answered by the memo, which keeps that budget.
    tiny = Event.model_validate(
        {"id": "t", "invocation_id": "inv1", "author": "user", "timestamp": 250.0, "content": {}}
    )
    events = [_big_summary(), _model_error("x1", 302.0, 200), tiny, _model_error("x2", 303.0, 200)]
    assert _memo_after(events, TOKEN) == GateMemo(GateBound(200.0, 25), None, None)


# -- which events are followed or answered by a model call, written from the docstrings -----


def _tool_result(author: str = "agent", **fields: Any) -> Event:
    """A tool's function response of `author`, inv1, with `fields`."""
    return response_event("r9", "inv1", 112.0, "k9", "lookup", author=author, **fields)


def _compaction(start: float, end: float) -> dict[str, Any]:
    return {
        "compaction": {
            "start_timestamp": start,
            "end_timestamp": end,
            "compacted_content": {"role": "model", "parts": [{"text": "sum"}]},
        }
    }


@pytest.mark.parametrize(
    "response",
    [
        _tool_result(author="user"),
        _tool_result(partial=True),
        _tool_result(isolation_scope="scope-1"),
        _tool_result(actions=_compaction(100.0, 111.0)),
        _tool_result(actions={"rewind_before_invocation_id": "inv0"}),
    ],
    ids=["user", "partial", "scoped", "summary", "rewind"],
)
def test_no_model_call_follows_these_function_responses(response: Event) -> None:
    # The user's own function results, a partial chunk, a scoped event, a summary and
    # a rewind are never followed by a check, whatever parts they carry.
    assert next_model_call(response) is None


def test_a_trailing_code_execution_result_is_followed_by_the_authors_check() -> None:
    executed = Event.model_validate(
        {
            "id": "x1",
            "invocation_id": "inv1",
            "author": "coder",
            "timestamp": 112.0,
            "branch": "root.coder",
            "content": {
                "role": "model",
                "parts": [
                    {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4"}},
                ],
            },
        }
    )
    assert next_model_call(executed) == TokenHook(agent_name="coder", current_branch="root.coder")


def test_the_check_after_a_tool_step_reads_the_events_branch() -> None:
    assert next_model_call(_tool_result(branch="root.agent")) == TokenHook(
        agent_name="agent", current_branch="root.agent"
    )


def _model_reply(author: str = "agent", **fields: Any) -> Event:
    """A model text reply of `author` in inv1 (role model whoever the author is)."""
    return Event.model_validate(
        {
            "id": "m9",
            "invocation_id": "inv1",
            "author": author,
            "timestamp": 111.0,
            "content": {"role": "model", "parts": [{"text": "an answer"}]},
        }
        | fields
    )


@pytest.mark.parametrize(
    "reply",
    [
        _model_reply(author="user"),
        _model_reply(partial=True),
        _model_reply(isolation_scope="scope-1"),
        _model_reply(actions=_compaction(100.0, 110.0)),
        _model_reply(actions={"rewind_before_invocation_id": "inv0"}),
    ],
    ids=["user", "partial", "scoped", "summary", "rewind"],
)
def test_these_model_contents_answer_no_model_call(reply: Event) -> None:
    assert answered_model_call(SessionProjection(SESSION), reply) is None


def test_the_check_a_reply_answers_reads_the_replys_branch() -> None:
    reply = _model_reply(branch="root.agent")
    assert answered_model_call(SessionProjection(SESSION), reply) == TokenHook(
        agent_name="agent", current_branch="root.agent"
    )


def test_a_seed_keeps_the_previous_summarys_branch() -> None:
    log = _seeded_session("an earlier summary")
    summary = log[2].envelope.event.model_copy(update={"branch": "root"})
    log[2] = logged([summary], [log[2].offset])[0]
    _, requests = replay_decisions(SESSION, log, TOKEN)
    assert requests
    seed = requests[0].seed
    assert seed is not None
    # Reference §5.4: author "model", P's branch, timestamp P's start.
    assert (seed.author, seed.branch, seed.timestamp) == ("model", "root", 111.0)


def test_a_window_of_events_the_projection_does_not_hold_is_a_bug() -> None:
    log = _log(_invocations(3))
    projection = project(SESSION, log[:4])
    copies = [event.model_copy(deep=True) for event in live_events(projection)]
    window = select_post_invocation_window(copies, SLIDING)
    assert window is not None
    with pytest.raises(ValueError, match="window event") as raised:
        compaction_request(projection, window, decided_at_offset=Offset(40))
    assert str(raised.value) == "a window event is not a live event of the projection"


# -- a check before the next model call that selects nothing is remembered ---------------


def test_a_tool_step_check_that_selects_nothing_leaves_the_memo() -> None:
    # The response reports 200 >= 100, so the check before the next model call
    # selects; one candidate under retention 1 makes no window. The memo it leaves:
    # floor 200 (the summary's start), budget 338 - (338 - 27) = 27; the response,
    # stamped before the floor, adds nothing to the removable sum.
    answer = _agent_event(
        "r",
        150.0,
        content={"role": "user", "parts": [{"functionResponse": {"id": "c", "name": "t"}}]},
        usage_metadata={"prompt_token_count": 200},
    )
    assert _memo_after([_big_summary(), answer], TOKEN) == GateMemo(
        GateBound(200.0, 27), None, None
    )


def test_another_record_at_the_last_offset_decides_nothing() -> None:
    # An offset at or below the last one folded is a redelivery, whatever it holds:
    # here the first event of a third invocation, which would complete inv2.
    log = _log(_invocations(3))
    before = project(SESSION, log[:4])
    again = logged([log[4].envelope.event], [log[3].offset])[0]
    assert decide_compaction(before, apply(before, again), again, SLIDING) is None


def test_an_armed_sliding_hook_the_memo_answers_under_the_token_count_selects_nothing() -> None:
    # Both triggers, S [100, 101] of 338 characters. u2 completes inv1 with no count since
    # S: the hook selects (the estimate, 300 // 4 = 75, is below 100) and finds nothing.
    # The token window passes the gate, so it gets no bound; the sliding bound: floor 103
    # (u2), budget 338 - (39 - 27) = 326, spent by a2 (40), u3 (39) and a3 (40): 207. a2
    # and a3 report 50 tokens, below 100. u4 completes inv3, two new invocations: the
    # hook is armed, yet the count is below the threshold and the bound holds, so nothing
    # is selected. u4 is stamped 102.5, below the floor: the bound goes, nothing is left.
    config = CompactionConfig(
        compaction_interval=2, overlap_size=0, token_threshold=100, event_retention_size=0
    )
    usage = {"usage_metadata": {"prompt_token_count": 50}}
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("a1", "inv1", 101.0, "a1", author="agent"),
        summary_event("s", 100.0, 101.0, 102.0, "p" * 300),
        text_event("u2", "inv2", 103.0, "q2"),
        text_event("a2", "inv2", 104.0, "a2", author="agent", **usage),
        text_event("u3", "inv3", 105.0, "q3"),
        text_event("a3", "inv3", 106.0, "a3", author="agent", **usage),
        text_event("u4", "inv4", 102.5, "q4"),
    ]
    log = _log(events)
    before, requests = replay_decisions(SESSION, log[:-1], config)
    assert requests == []
    assert before.gate_memo == GateMemo(None, GateBound(103.0, 207), 0)
    assert before.invocations.since_compaction == 2
    assert before.tokens.last_prompt_tokens == 50
    folded = step(before, log[-1], config)
    assert folded.request is None
    assert folded.projection.gate_memo is None


def test_a_partial_chunk_that_completes_an_invocation_leaves_the_memo_of_its_selection() -> None:
    # The chunk of inv2 completes inv1: the hook selects (no count since the summary,
    # so the estimate decides, and it is below 100) and finds nothing. The chunk is
    # not stored, yet the memo is kept: floor 200, budget 338 - (338 - 27) = 27,
    # the question at 150 lying below the floor.
    question = Event.model_validate(
        {
            "id": "u1",
            "invocation_id": "inv1",
            "author": "user",
            "timestamp": 150.0,
            "content": {"role": "user", "parts": [{"text": "q"}]},
        }
    )
    chunk = _agent_event(
        "p1",
        151.0,
        invocation_id="inv2",
        partial=True,
        content={"role": "model", "parts": [{"text": "par"}]},
    )
    memo = _memo_after([_big_summary(), question, chunk], TOKEN)
    assert memo == GateMemo(GateBound(200.0, 27), None, None)


def test_a_refused_token_window_leaves_the_memo_of_the_sliding_window() -> None:
    # The summary S [100, 101] lands after inv2's call; the tool's response r2 is
    # the first record after it, so the fold holds no memo. The check before the
    # next model call reads the estimate (S alone is 600 // 4 = 150 >= 100) and
    # chooses the token window [seed, u2], which was refused before: nothing is
    # emitted, and the selection is remembered. The token trigger's window passed
    # the gate, so it gets no bound; the sliding window can reach inv2 only (S
    # ends at 101), from 103 on, far less than S: its bound holds.
    both = CompactionConfig(
        compaction_interval=2, overlap_size=0, token_threshold=100, event_retention_size=1
    )
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("a1", "inv1", 101.0, "a1", author="agent"),
        text_event("u2", "inv2", 103.0, "q2"),
        call_event("c2", "inv2", 104.0, "k1", "lookup"),
        summary_event("s", 100.0, 101.0, 104.5, "p" * 600),
        response_event("r2", "inv2", 105.0, "k1", "lookup"),
    ]
    log = _log(events)
    _, requests = replay_decisions(SESSION, log, both)
    assert [(r.trigger, r.event_ids, r.decided_at_offset) for r in requests] == [
        ("token_threshold", ("u2",), 50)
    ]
    refusal = logged([_refusal(requests[0].request_id, 1)], [1])[0]
    projection, again = replay_decisions(SESSION, [log[0], refusal, *log[1:]], both)
    assert again == []
    memo = projection.gate_memo
    assert memo is not None
    assert memo.token is None
    assert memo.sliding is not None
    assert memo.sliding.floor == 103.0
    assert memo.overlap_size == 0


_BOTH_NO_RETENTION = CompactionConfig(
    compaction_interval=2, overlap_size=0, token_threshold=100, event_retention_size=0
)


def _refused_memo(events: list[Event], decided: tuple[str, tuple[str, ...], int]) -> object:
    """The memo after `events` replayed behind a refusal of the one request they decide."""
    log = _log(events)
    _, requests = replay_decisions(SESSION, log, _BOTH_NO_RETENTION)
    assert [(r.trigger, r.event_ids, r.decided_at_offset) for r in requests] == [decided]
    refusal = logged([_refusal(requests[0].request_id, 1)], [1])[0]
    projection, again = replay_decisions(SESSION, [log[0], refusal, *log[1:]], _BOTH_NO_RETENTION)
    assert again == []
    return projection.gate_memo


def test_a_refused_check_a_reply_answers_leaves_the_sliding_memo() -> None:
    # As above, for the check before the model call a2 answers (chosen on the
    # events before a2): the token window [seed, u2] was refused.
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("a1", "inv1", 101.0, "a1", author="agent"),
        text_event("u2", "inv2", 103.0, "q2"),
        summary_event("s", 100.0, 101.0, 103.5, "p" * 600),
        text_event("a2", "inv2", 104.0, "a2", author="agent"),
    ]
    memo = _refused_memo(events, ("token_threshold", ("u2",), 40))
    assert isinstance(memo, GateMemo)
    assert memo.token is None
    assert memo.sliding is not None
    assert memo.sliding.floor == 103.0


def test_a_refused_post_invocation_window_leaves_the_sliding_memo() -> None:
    # u3 completes inv2: the hook chooses the token window [seed, u2, a2], refused.
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("a1", "inv1", 101.0, "a1", author="agent"),
        text_event("u2", "inv2", 103.0, "q2"),
        text_event("a2", "inv2", 104.0, "a2", author="agent"),
        summary_event("s", 100.0, 101.0, 104.5, "p" * 600),
        text_event("u3", "inv3", 106.0, "q3"),
    ]
    memo = _refused_memo(events, ("token_threshold", ("u2", "a2"), 50))
    assert isinstance(memo, GateMemo)
    assert memo.token is None
    assert memo.sliding is not None
    assert memo.sliding.floor == 103.0


def test_a_decided_request_drops_the_memo_the_fold_held() -> None:
    # Before r2 the fold remembers the sliding window's bound (the checks at a2 and
    # c2 read the estimate, 394 // 4 = 98 < 100, and selected nothing); r2 follows
    # c2's count of 500, so the check after it decides a token window: the
    # projection then waits on it and remembers nothing.
    config = CompactionConfig(
        compaction_interval=2, overlap_size=0, token_threshold=100, event_retention_size=0
    )
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("a1", "inv1", 101.0, "a1", author="agent"),
        text_event("u2", "inv2", 103.0, "q2"),
        summary_event("s", 100.0, 101.0, 103.5, "p" * 390),
        text_event("a2", "inv2", 104.0, "a2", author="agent"),
        call_event("c2", "inv2", 105.0, "k1", usage_metadata={"prompt_token_count": 500}),
        response_event("r2", "inv2", 106.0, "k1"),
    ]
    log = _log(events)
    before, requests = replay_decisions(SESSION, log[:-1], config)
    assert requests == []
    assert before.gate_memo is not None
    folded = step(before, log[-1], config)
    assert folded.request is not None
    assert folded.request.event_ids == ("u2", "a2", "c2", "r2")
    assert folded.projection.gate_memo is None


def test_a_request_names_the_window_from_the_sessions_first_live_event() -> None:
    log = _log(_invocations(3))
    before = project(SESSION, log[:4])
    window = select_post_invocation_window(live_events(before), SLIDING)
    assert window is not None
    request = compaction_request(before, window, decided_at_offset=Offset(40))
    assert request is not None
    assert request.event_offsets == (0, 10, 20, 30)
    assert request.event_ids == ("u1", "a1", "u2", "a2")
    assert request.decided_at_offset == 40


#: Token trigger alone: 600 tokens, two events kept.
TOKEN_600 = CompactionConfig(token_threshold=600, event_retention_size=2)


def _two_summaries_then(*tail: Event) -> list[LoggedEvent]:
    """inv1, a long summary S1 of it, inv2, a short summary S2 of it, then `tail`.

    Neither summary holds the other, so both are shown: S1's 4,000 characters
    (1,000 estimated tokens) count in the request although the tail a
    decision reads starts at S2. No event records a prompt-token count.
    """
    events = [
        text_event("u1", "inv1", 100.0, "q1"),
        text_event("v1", "inv1", 101.0, "r1"),
        summary_event("s1", 100.0, 101.0, 102.0, "S" * 4000),
        text_event("u2", "inv2", 103.0, "q2"),
        text_event("v2", "inv2", 104.0, "r2"),
        summary_event("s2", 103.0, 104.0, 105.0, "sum"),
        *tail,
    ]
    return _log(events)


def _token_windows(log: list[LoggedEvent], *, use_memo: bool) -> list[tuple[str, ...]]:
    _, requests = replay_decisions(SESSION, log, TOKEN_600, use_memo=use_memo)
    return [request.event_ids for request in requests if request.trigger == "token_threshold"]


def test_the_post_invocation_estimate_counts_a_summary_before_the_newest_one() -> None:
    # ADK estimates from the whole request: S1 + S2 + inv3 is over 1,000 tokens. Candidates
    # after S2 (u3, v3, w3) keep two, so the window is S2's seed and u3.
    log = _two_summaries_then(
        text_event("u3", "inv3", 106.0, "q" * 400),
        text_event("v3", "inv3", 107.0, "r3"),
        text_event("w3", "inv3", 108.0, "s3"),
        text_event("u4", "inv4", 109.0, "q4"),  # completes inv3
    )
    assert _token_windows(log, use_memo=False) == [("u3",)]
    assert _token_windows(log, use_memo=True) == [("u3",)]


def test_a_branch_check_estimate_counts_a_summary_before_the_newest_one() -> None:
    # The check before the agent's next model call on branch "b": the view serves no
    # branch, so the estimate is built for the check's own request, from every live event.
    log = _two_summaries_then(
        text_event("u3", "inv3", 106.0, "q" * 400),
        call_event("c3", "inv3", 107.0, "k3", branch="b"),
        response_event("r3", "inv3", 108.0, "k3", branch="b"),
    )
    assert _token_windows(log, use_memo=False) == [("u3",)]
    assert _token_windows(log, use_memo=True) == [("u3",)]


def test_a_post_invocation_estimate_for_another_agent_than_the_views_counts_all() -> None:
    # The agent replies, so the view serves "agent" and not the hook's request (no agent):
    # the estimate is built from every live event, S1 included.
    log = _two_summaries_then(
        text_event("u3", "inv3", 106.0, "q" * 400),
        text_event("v3", "inv3", 107.0, "r3", author="agent"),
        text_event("w3", "inv3", 108.0, "s3", author="agent"),
        text_event("u4", "inv4", 109.0, "q4"),  # completes inv3
    )
    assert _token_windows(log, use_memo=False) == [("u3",)]
    assert _token_windows(log, use_memo=True) == [("u3",)]


def test_a_branch_check_estimate_leaves_out_a_sibling_branchs_events() -> None:
    # The check before the agent's next model call on branch "b" estimates the request of
    # branch "b": the 4,000 characters another agent wrote on branch "c" are not in it
    # (about 110 tokens, under 600), though the view, which serves no branch, shows them.
    log = _log(
        [
            text_event("u3", "inv3", 100.0, "q" * 400),
            text_event("x3", "inv3", 101.0, "x" * 4000, author="other", branch="c"),
            call_event("c3", "inv3", 102.0, "k3", branch="b"),
            response_event("r3", "inv3", 103.0, "k3", branch="b"),
        ]
    )
    before_response = project(SESSION, log[:3])
    assert before_response.view.request.current_branch is None
    assert _token_windows(log, use_memo=False) == []
    assert _token_windows(log, use_memo=True) == []
