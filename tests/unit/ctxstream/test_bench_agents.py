"""The agents workload (``ctxstream.bench.agents``) has the shape its README states.

Written from ``ctxstream/bench/README.md`` ("The agents workload"), not from
the code: every record decodes; the same arguments give the same bytes; the
kinds of event come in the stated proportions (classified here from the
decoded events, not from the generator's labels); calls and responses pair
as ADK writes them; state deltas cover the session, ``user:`` and ``app:``
scopes; the sessions' lengths have the stated long tail; the projector
settings the benchmarks pass configure every ``tenant/app``.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from functools import cache
from typing import Final

import orjson
import pytest

from ctxstream.bench.agents.apps import APPS
from ctxstream.bench.agents.census import census_lines
from ctxstream.bench.agents.plan import session_lengths
from ctxstream.bench.agents.settings import with_workload_apps, workload_env
from ctxstream.bench.agents.stream import AgentsWorkload
from schemas.codec import decode_envelope
from schemas.event import Event, FunctionCall, FunctionResponse
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings

EVENTS: Final = 20_000
SESSIONS: Final = 200


@cache
def _records(events: int, sessions: int, seed: int = 0) -> tuple[tuple[bytes, bytes], ...]:
    return tuple(AgentsWorkload(events, sessions, seed=seed).records())


@cache
def _sessions(events: int, sessions: int) -> dict[str, list[Event]]:
    """The decoded events of each session, in stream order."""
    by_session: defaultdict[str, list[Event]] = defaultdict(list)
    for key, value in _records(events, sessions):
        envelope = decode_envelope(value, record_key=key)
        assert envelope.session_key == key.decode()
        by_session[envelope.session_key].append(envelope.event)
    return dict(by_session)


def _parts(event: Event) -> list[str]:
    """What each part of `event` is: ``text``, ``call`` or ``response``."""
    parts = event.content.parts if event.content is not None else None
    return [
        "call" if part.function_call else "response" if part.function_response else "text"
        for part in parts or []
    ]


def _calls(event: Event) -> list[FunctionCall]:
    parts = event.content.parts if event.content is not None else None
    return [part.function_call for part in parts or [] if part.function_call is not None]


def _responses(event: Event) -> list[FunctionResponse]:
    parts = event.content.parts if event.content is not None else None
    return [part.function_response for part in parts or [] if part.function_response is not None]


def _kind(event: Event, later_in_invocation: list[Event]) -> str:
    """The event's kind, as the README names them, from the event itself."""
    parts = _parts(event)
    if not parts:
        return "state"
    if event.author == "user":
        return "user"
    if "call" in parts:
        return "call"
    if "response" in parts:
        return "response"
    calls_follow = any("call" in _parts(later) for later in later_in_invocation)
    return "text" if calls_follow else "answer"


def _kinds(events: list[Event]) -> Counter[str]:
    counted: Counter[str] = Counter()
    for index, event in enumerate(events):
        later = [e for e in events[index + 1 :] if e.invocation_id == event.invocation_id]
        counted[_kind(event, later)] += 1
    return counted


def test_the_same_arguments_give_the_same_records_and_the_seed_changes_them() -> None:
    first = _records(3_000, 30)
    assert tuple(AgentsWorkload(3_000, 30).records()) == first
    workload = AgentsWorkload(3_000, 30)
    assert list(workload.records()) == list(workload.records())  # a second pass, the same
    assert _records(3_000, 30, seed=1) != first
    assert len(first) == 3_000


def test_every_record_decodes_and_each_session_has_its_planned_length() -> None:
    workload = AgentsWorkload(EVENTS, SESSIONS)
    sessions = _sessions(EVENTS, SESSIONS)
    assert sum(len(events) for events in sessions.values()) == EVENTS
    assert {plan.key: plan.events for plan in workload.plans} == {
        key: len(events) for key, events in sessions.items()
    }
    for events in sessions.values():
        stamps = [event.timestamp for event in events]
        assert all(a < b for a, b in itertools.pairwise(stamps)), "timestamps rise strictly"
        assert len({event.id for event in events}) == len(events)


def test_several_tenants_and_every_app_with_its_own_agent() -> None:
    sessions = _sessions(EVENTS, SESSIONS)
    tenants = Counter(key.split("/")[0] for key in sessions)
    apps = Counter(key.split("/")[1] for key in sessions)
    assert set(tenants) == {f"tenant{n}" for n in range(6)}
    assert tenants.most_common(1)[0][0] == "tenant0"  # the biggest customer
    assert set(apps) == {"support", "research", "coder", "chat"}
    agents = {"support": "support_agent", "research": "research_agent", "coder": "coding_agent"}
    agents["chat"] = "assistant"
    for key, events in sessions.items():
        authors = {event.author for event in events} - {"user"}
        assert authors == {agents[key.split("/")[1]]}


#: The README's proportions of the events, each give or take 2.5 points.
STATED_SHARES: Final = {
    "user": 0.17,
    "text": 0.07,
    "call": 0.27,
    "response": 0.27,
    "answer": 0.17,
    "state": 0.055,
}


def test_each_kind_comes_in_its_stated_proportion_and_the_census_counts_them() -> None:
    sessions = _sessions(EVENTS, SESSIONS)
    kinds: Counter[str] = Counter()
    for events in sessions.values():
        kinds += _kinds(events)
    assert sum(kinds.values()) == EVENTS
    for kind, share in STATED_SHARES.items():
        assert kinds[kind] / EVENTS == pytest.approx(share, abs=0.025), kind
    workload = AgentsWorkload(EVENTS, SESSIONS)
    for _ in workload.records():
        pass
    figures = workload.census.figures()
    assert figures["events"] == EVENTS
    assert (figures["sessions"], figures["tenants"], figures["apps"]) == (SESSIONS, 6, 4)
    counted = figures["events_by_kind"]
    for kind in ("user", "call", "response", "state"):
        assert counted[kind] == kinds[kind], kind
    # A text cut off before the call that would follow it is an answer to the classifier.
    assert counted["text"] + counted["answer"] == kinds["text"] + kinds["answer"]
    assert abs(counted["text"] - kinds["text"]) <= SESSIONS
    assert figures["longest_session_events"] == max(len(e) for e in sessions.values())
    lines = census_lines(figures)
    assert f"workload_events {EVENTS}" in lines
    assert f"workload_call_events {counted['call']}" in lines


def test_calls_and_responses_pair_as_adk_writes_them() -> None:
    """Each response answers an earlier call of its invocation by id and name, once; a call
    event is followed at once by one event with all its responses (parallel calls too), role
    user, by the agent; only a session's last invocation, cut at its length, may end open."""
    parallel = 0
    for events in _sessions(EVENTS, SESSIONS).values():
        called: dict[str, tuple[str, str]] = {}  # id -> (name, invocation)
        answered: set[str] = set()
        last_invocation = events[-1].invocation_id
        for index, event in enumerate(events):
            calls = _calls(event)
            responses = _responses(event)
            assert not (calls and responses)
            for call in calls:
                assert call.id
                assert call.id not in called
                called[call.id] = (call.name or "", event.invocation_id)
            for response in responses:
                assert response.id in called
                assert response.id not in answered
                assert called[response.id] == (response.name, event.invocation_id)
                answered.add(response.id)
            if responses:
                assert event.content is not None
                assert event.content.role == "user"
                assert event.author != "user"
            if calls:
                parallel += len(calls) > 1
                if index + 1 < len(events):
                    after = _responses(events[index + 1])
                    assert sorted(r.id or "" for r in after) == sorted(c.id or "" for c in calls)
                else:
                    assert event.invocation_id == last_invocation
        open_calls = set(called) - answered
        assert all(called[call][1] == last_invocation for call in open_calls)
    assert parallel > 0


def test_state_deltas_cover_the_session_user_and_app_scopes() -> None:
    scopes: Counter[str] = Counter()
    events = [event for session in _sessions(EVENTS, SESSIONS).values() for event in session]
    for event in events:
        for key in event.actions.state_delta:
            assert not key.startswith("temp:")  # ADK drops temp: keys before appending
            scope = key.split(":", 1)[0] if ":" in key else "session"
            scopes[scope] += 1
    assert set(scopes) == {"session", "user", "app"}
    writing = sum(bool(event.actions.state_delta) for event in events)
    assert 0.2 < writing / len(events) < 0.5


def test_the_sessions_have_a_long_tail() -> None:
    """A few long sessions, many short: the README's figures for 2,000 sessions."""
    lengths = sorted(session_lengths(200_000, 2_000), reverse=True)
    assert sum(lengths) == 200_000
    assert min(lengths) >= 1
    assert 14_000 <= lengths[0] <= 16_500
    assert 0.24 <= sum(lengths[:20]) / 200_000 <= 0.30  # the top 1%
    assert 40 <= statistics.median(lengths) <= 50
    assert 20 <= lengths[-1] <= 30
    # The shape is the seed's to place, not to change.
    assert sorted(session_lengths(200_000, 2_000, seed=5), reverse=True) == lengths
    assert session_lengths(200_000, 2_000, seed=5) != session_lengths(200_000, 2_000)
    with pytest.raises(ValueError, match="sessions"):
        AgentsWorkload(10, 11)


def test_the_long_sessions_run_alongside_the_short_ones() -> None:
    """The longest session's events are spread over the stream, not bunched at its end."""
    records = _records(EVENTS, SESSIONS)
    by_key = Counter(key for key, _ in records)
    longest = by_key.most_common(1)[0][0]
    positions = [index for index, (key, _) in enumerate(records) if key == longest]
    quarter = len(records) // 4
    for start in range(0, len(records), quarter):
        inside = sum(start <= p < start + quarter for p in positions)
        assert inside > len(positions) / 8


def test_the_settings_configure_every_tenant_and_app_in_process_and_by_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_process = with_workload_apps(ProjectorSettings(), ["tenant", "background"])
    for name, value in workload_env(["tenant", "background"]).items():
        monkeypatch.setenv(name, value)
    from_env = ProjectorSettings()
    for settings in (in_process, from_env):
        for prefix in ("tenant", "background"):
            for number in range(6):
                for app in APPS:
                    key = SessionKey(f"{prefix}{number}/{app.name}/u1/s1")
                    assert settings.compaction_for(key) == app.compaction
                    assert settings.view_request_for(key).agent_name == app.agent
        default = SessionKey("warmup/app/u1/s1")
        assert settings.compaction_for(default) == settings.compaction
    triggers = {
        (config.has_sliding_window, config.has_token_threshold)
        for config in (app.compaction for app in APPS)
    }
    assert triggers == {(True, False), (False, True), (True, True)}


def test_the_envelopes_name_their_session_and_a_unique_idempotency_key() -> None:
    seen: set[str] = set()
    for key, value in _records(3_000, 30):
        row = orjson.loads(value)
        assert row["session_key"] == key.decode()
        assert row["tenant"] == key.decode().split("/")[0]
        assert row["idempotency_key"] not in seen
        seen.add(row["idempotency_key"])
    assert len(seen) == 3_000
