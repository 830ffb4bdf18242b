"""A projection as of an offset equals the fold of the session's records up to that offset.

The oracle is the plain rebuild (:func:`projections.fold.rebuild.rebuild_contents`)
of the generated log cut at the offset, for the view's own agent (read from
the incremental view) and for another agent (assembled from the records),
with conditional and creation records: the writer offset, the refusals up to
the offset and the state equal the rebuild's too.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.compaction.config import CompactionConfig
from projections.contents.assembly import ContentsRequest
from projections.fold.conditions import MAX_REFUSALS
from projections.fold.projection import context_contents, empty_projection, project
from projections.fold.rebuild import judged, rebuild_contents
from projections.fold.time_travel import ReadStopped, never, projection_as_of, unless_stopped
from projections.retention.log_retention import retained
from projections.retention.retained_vector import NeedsHistory
from schemas.logged_event import LoggedEvent
from tests.support.conditional_records import with_conditions
from tests.support.events import SESSION, logged, text_event
from tests.support.strategies import sessions

VIEW = ContentsRequest(agent_name="root")
OTHER = ContentsRequest(agent_name="helper", current_branch="root.helper")


@settings(deadline=None)  # two rebuilds per record of the session
@given(sessions(max_invocations=4))
def test_a_stop_check_that_never_stops_changes_no_result(log: list[LoggedEvent]) -> None:
    projection = project(SESSION, log, empty_projection(SESSION, VIEW))
    asked: list[None] = []

    def counting() -> bool:
        asked.append(None)
        return False

    for offset in [log[0].offset - 1, *(record.offset for record in log)]:
        checked = projection_as_of(projection, offset, counting)
        assert checked == projection_as_of(projection, offset, never), offset
        assert checked == projection_as_of(projection, offset), offset
    assert asked or len(log) == 1  # the refold asked between its records


def test_a_refold_stops_at_the_record_after_its_check_says_stop() -> None:
    log = bench_session(300)
    projection = project(BENCH_SESSION, log, empty_projection(BENCH_SESSION, VIEW))
    asked = 0

    def after_ten() -> bool:
        nonlocal asked
        asked += 1
        return asked > 10

    with pytest.raises(ReadStopped):
        projection_as_of(projection, log[-2].offset, after_ten)
    assert asked == 11  # it stopped at the first check that said so, not at the end


def test_unless_stopped_passes_every_item_while_the_check_says_go_on() -> None:
    assert list(unless_stopped(range(5), never)) == [0, 1, 2, 3, 4]
    with pytest.raises(ReadStopped):
        list(unless_stopped(range(5), lambda: True))


@settings(deadline=None)  # two rebuilds per record of the session
@given(with_conditions(sessions(max_invocations=4)))
def test_as_of_each_record_equals_the_rebuild_of_the_log_up_to_it(log: list[LoggedEvent]) -> None:
    projection = project(SESSION, log, empty_projection(SESSION, VIEW))
    for offset in [log[0].offset - 1, *(record.offset for record in log)]:
        as_of = projection_as_of(projection, offset)
        upto = [record for record in log if record.offset <= offset]
        for request in (VIEW, OTHER):
            assert context_contents(as_of, request) == rebuild_contents(upto, request), offset
        verdicts = judged(upto)
        assert as_of.conditions.writer_offset == verdicts.writer_offset, offset
        assert list(as_of.conditions.refused) == verdicts.refused[-MAX_REFUSALS:], offset
        assert as_of.state == project(SESSION, upto).state, offset


def test_as_of_cuts_at_the_last_record_at_or_below_the_offset() -> None:
    events = [text_event("a", "i1", 100), text_event("b", "i1", 101), text_event("c", "i2", 102)]
    projection = project(SESSION, logged(events, [3, 5, 9]), empty_projection(SESSION, VIEW))

    six = projection_as_of(projection, 6)
    assert six.last_offset == 5
    assert [c.parts[0].text for c in context_contents(six) if c.parts] == ["x", "x"]
    assert len(context_contents(six)) == 2
    assert projection_as_of(projection, 2).last_offset == -1
    assert context_contents(projection_as_of(projection, 2)) == []
    assert projection_as_of(projection, 9) is projection
    assert projection_as_of(projection, 50) is projection


def test_a_released_projection_asks_for_the_history_before_its_last_offset() -> None:
    log = bench_session(600)
    whole = project(BENCH_SESSION, log, empty_projection(BENCH_SESSION, VIEW))
    config = CompactionConfig(compaction_interval=4, overlap_size=1)
    released = retained(whole, config)
    assert released.log.records.first > 0  # compaction let the start go
    with pytest.raises(NeedsHistory):
        projection_as_of(released, log[10].offset)
    assert projection_as_of(released, log[-1].offset) is released
