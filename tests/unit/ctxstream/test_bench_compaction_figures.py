"""The compaction benchmark's workload and figures (pure)."""

from __future__ import annotations

import pytest

from ctxstream.bench.agents.census import WorkloadCensus
from ctxstream.bench.figures import (
    STAMP_STEP_S,
    agents_sessions,
    bench_key,
    compaction_figures,
    restamped,
    staggered_rounds,
    workload_rounds,
)


def test_figures_come_from_trigger_and_applied_times() -> None:
    triggered = {"a": 10.0, "b": 10.5, "c": 11.0, "lost": 11.5}
    applied = {"a": 10.1, "b": 10.7, "c": 11.3}
    committed = {"a": 1, "b": 2, "c": 1}
    figures = compaction_figures(triggered, applied, committed)
    assert (figures.p50_ms, figures.p99_ms) == (200.0, 300.0)
    assert figures.summaries_per_s == round(3 / 1.3, 3)
    assert (figures.duplicates, figures.missing, figures.requests) == (1, 1, 4)
    with pytest.raises(ValueError, match="no request"):
        compaction_figures({"a": 1.0}, {}, {})


def test_a_round_holds_one_invocation_of_every_session_in_order() -> None:
    keys = [bench_key(n) for n in range(3)]
    rounds = workload_rounds(keys, 2)
    assert len(rounds) == 2
    assert [e.session_key for e in rounds[0]] == [k for k in keys for _ in range(4)]
    first = [e.event for e in rounds[0][:4]]
    assert [e.invocation_id for e in first] == ["inv0"] * 4
    assert [e.timestamp for e in first] == sorted(e.timestamp for e in first)
    assert first[1].content is not None
    parts = first[1].content.parts or []
    assert parts[0].function_call is not None
    assert rounds[1][0].event.timestamp > rounds[0][-1].event.timestamp


def test_staggered_sessions_start_rounds_apart() -> None:
    keys = [bench_key(n) for n in range(2)]
    rounds = workload_rounds(keys, 2, stagger=2)
    shown = [[(e.session_key, e.event.invocation_id) for e in r[::4]] for r in rounds]
    assert shown == [
        [(keys[0], "inv0")],
        [(keys[0], "inv1"), (keys[1], "inv0")],
        [(keys[1], "inv1")],
    ]


def test_the_measured_sessions_are_agents_sessions_of_several_tenants_and_apps() -> None:
    census = WorkloadCensus()
    sessions = agents_sessions(12, 5, tenant_prefix="bench", census=census)
    assert [len(invocations) for invocations in sessions] == [5] * 12
    keys = [session[0][0].session_key for session in sessions]
    assert len(set(keys)) == 12
    assert all(key.startswith("bench") for key in keys)
    assert len({key.split("/")[1] for key in keys}) > 1
    assert len({key.split("/")[0] for key in keys}) > 1
    for session in sessions:
        invocation_ids = [{e.event.invocation_id for e in invocation} for invocation in session]
        assert all(len(ids) == 1 for ids in invocation_ids)  # one invocation each
        assert len({ids.pop() for ids in invocation_ids}) == 5
    made = sum(len(invocation) for session in sessions for invocation in session)
    assert census.figures()["events"] == made
    rounds = staggered_rounds(sessions, stagger=3)
    assert len(rounds) == 5 + 2
    assert sum(len(r) for r in rounds) == made
    assert {e.session_key for e in rounds[0]} == {keys[0], keys[3], keys[6], keys[9]}


def test_restamped_events_keep_their_order_at_the_time_given() -> None:
    envelopes = workload_rounds([bench_key(0)], 1)[0]
    live = restamped(envelopes, 1_796_000_000.0)
    assert [e.event.timestamp for e in live] == [
        1_796_000_000.0 + n * STAMP_STEP_S for n in range(len(envelopes))
    ]
    stamps = [e.event.timestamp for e in live]
    assert stamps == sorted(set(stamps))  # distinct in a float near today's epoch
    assert [e.event.id for e in live] == [e.event.id for e in envelopes]
    back = [e.model_copy(update={"event": o.event}) for e, o in zip(live, envelopes, strict=True)]
    assert back == envelopes
