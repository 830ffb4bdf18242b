"""The live view against ADK 2.13.0's own readers: every answer equal on the kept events.

For generated sessions (transfers, scopes, branches, long-running calls,
rewinds, summaries), ADK's contents (every agent x branch x scope, both
``include_contents``), its router and both compaction selections give the same
answer on :func:`projections.live_view.selection.select_live`'s events as on the
whole session (oracle: ``tests/support/live_view_oracle.py``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.live_view.selection import select_live
from schemas.event import Event
from tests.support.live_view_oracle import assert_answers_alike
from tests.support.strategies import session_events


def _brief(events: list[Event]) -> list[str]:
    """One line per event: what the failure needs to be read."""
    named = {"id", "invocation_id", "author", "branch", "isolation_scope", "timestamp"}
    return [
        f"{p}:{e.invocation_id}:{e.author}:{e.branch}:{e.isolation_scope}:{e.timestamp}:"
        f"{e.model_dump(exclude_defaults=True, exclude=named)}"
        for p, e in enumerate(events)
    ]


def _assert_equivalent(events: list[Event], overlap: int) -> None:
    view = select_live(events, overlap)
    assert list(view.kept) == sorted(set(view.kept))
    assert all(p in view.kept for p in range(view.suffix_start, len(events)))
    assert_answers_alike(events, view.kept, overlap, (view, _brief(events)))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session_events(max_invocations=8), st.integers(0, 3))
def test_adk_readers_answer_the_same_on_the_live_view(events: list[Event], overlap: int) -> None:
    _assert_equivalent(events, overlap)


def _event(
    i: int, inv: str, author: str, ts: float, text: str | None = None, /, **more: object
) -> Event:
    fields: dict[str, object] = {"id": f"e{i}", "invocation_id": inv, "author": author}
    fields["timestamp"] = ts
    if text is not None:
        role = "user" if author == "user" else "model"
        fields["content"] = {"role": role, "parts": [{"text": text}]}
    return Event.model_validate({**fields, **more})


def _summary(i: int, start: float, end: float, ts: float, **more: object) -> Event:
    compaction: dict[str, object] = {"startTimestamp": start, "endTimestamp": end}
    compaction["compactedContent"] = {"role": "model", "parts": [{"text": f"sum {start}-{end}"}]}
    return _event(i, f"cmp{i}", "user", ts, actions={"compaction": compaction}, **more)


def _conversation(turns: int) -> list[Event]:
    """`turns` invocations of a question and an answer; a summary after every second one."""
    events: list[Event] = []
    for turn in range(turns):
        ts = 10.0 * turn
        events.append(_event(len(events), f"inv{turn}", "user", ts + 1, f"q{turn}"))
        events.append(_event(len(events), f"inv{turn}", "root", ts + 2, f"a{turn}"))
        if turn % 2 == 1:
            events.append(_summary(len(events), ts - 9, ts + 2, ts + 3))
    return events


def test_e2_e3_the_overlap_invocations_before_the_next_window_are_kept() -> None:
    events = _conversation(6)
    for overlap in (0, 1, 2):
        view = select_live(events, overlap)
        assert len(view.kept) < len(events)
        kept_ids = {events[p].invocation_id for p in view.kept}
        assert {f"inv{turn}" for turn in range(6 - overlap, 6)} <= kept_ids
        _assert_equivalent(events, overlap)


def test_e4_routing_after_compaction_still_finds_the_sub_agent_that_replied() -> None:
    events = [
        _event(0, "inv0", "user", 1.0, "help me"),
        _event(1, "inv0", "root", 2.0, None, actions={"transferToAgent": "helper"}),
        _event(2, "inv0", "helper", 3.0, "helper here"),
        _summary(3, 1.0, 3.0, 4.0),
        _event(4, "inv1", "user", 5.0, "thanks"),
        _event(5, "inv1", "root", 6.0, "ok"),
        _summary(6, 5.0, 6.0, 7.0),
    ]
    view = select_live(events, 0)
    assert 2 in view.kept  # the sub-agent's reply the router reads
    assert len(view.kept) < len(events)
    _assert_equivalent(events, 0)


def test_e5_a_scoped_summary_masks_only_its_own_scope() -> None:
    events = [
        _event(0, "inv0", "user", 1.0, "start"),
        _event(1, "inv0", "worker", 1.5, "scoped step", isolationScope="X"),
        _event(2, "inv0", "root", 3.0, "coordinator answer"),
        _event(3, "inv0", "worker", 4.0, "scoped result", isolationScope="X"),
        _summary(4, 1.5, 4.0, 5.0, isolationScope="X"),
        _event(5, "inv1", "user", 6.0, "next"),
    ]
    view = select_live(events, 0)
    assert 2 in view.kept  # no unscoped summary covers the coordinator's answer
    _assert_equivalent(events, 0)
