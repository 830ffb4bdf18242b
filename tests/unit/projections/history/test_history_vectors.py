"""The history classification over every recorded vector the repository carries.

Each vector's events (tests/conformance/vectors/, recorded from ADK 2.13.0)
become one session's records; a ``compaction_decisions`` vector gets ADK's own
summaries (``expected.compactions``) right after the event each followed, and
a ``session_state`` vector with a rewind gets its rewind event last. The
statuses must say what the projector's fold and its view say
(fold_oracle.py), and the incremental fold must reach the same statuses.
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from projections.history.classification import classify_session, live_history
from projections.history.event_status import EventStatus
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import logged, rewind_event, summary_event
from tests.support.vectors import RECORDED_DIR, Vector, load_vectors, vector_id
from tests.unit.projections.history.fold_oracle import checked_statuses

KINDS: Final = (
    "contents",
    "compaction_decisions",
    "sliding_window",
    "token_threshold",
    "session_state",
    "summarizer_render",
)
VECTORS: Final = [vector for kind in KINDS for vector in load_vectors(kind, RECORDED_DIR)]


def _session_events(vector: Vector) -> list[Event]:
    """The vector's events in stream order, with the summaries and rewind ADK appended."""
    given: list[dict[str, Any]] = vector["input"]["events"]
    events = [Event.model_validate(data) for data in given]
    expected = vector["expected"]
    if vector["kind"] == "compaction_decisions":
        script = vector["input"].get("summaries", [])
        placed: list[Event] = []
        compactions = expected["compactions"]
        for index, each in enumerate(events):
            placed.append(each)
            for number, made in enumerate(compactions):
                if made["after_index"] == index:
                    stamp = script[number]["timestamp"] if number < len(script) else each.timestamp
                    start, end = made["start_timestamp"], made["end_timestamp"]
                    placed.append(summary_event(f"adk-summary-{number}", start, end, stamp))
        return placed
    rewind = expected.get("rewind_event") if vector["kind"] == "session_state" else None
    if rewind:
        last = events[-1].timestamp if events else 0.0
        events.append(rewind_event("adk-rewind", rewind["rewind_before_invocation_id"], last + 1))
    return events


def test_every_kind_of_vector_is_read() -> None:
    assert {vector["kind"] for vector in VECTORS} == set(KINDS)
    assert len(VECTORS) > 150


@pytest.mark.parametrize("vector", VECTORS, ids=vector_id)
def test_statuses_of_a_vector_say_what_the_fold_says(vector: Vector) -> None:
    events = _session_events(vector)
    if not events:
        assert classify_session([]) == {}
        return
    records: list[LoggedEvent] = logged(events, range(len(events)))
    statuses = checked_statuses(records)
    live = [o for o, s in statuses.items() if s is EventStatus.LIVE]
    assert [record.offset for record in live_history(records)] == live
