"""Properties of the history classification over generated sessions (tests/support/strategies.py).

The incremental fold equals the full classification after every record, and
both say what the projector's fold says: which records it applies, which
rewinds leave, what §3.3 masking shows per isolation scope and what the
context view holds, which conditional records are stale and the writer offset.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.history.classification import classify_session, live_history
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance, statuses_of
from schemas.codec import decode_envelope, encode
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.conditional_records import with_conditions
from tests.support.strategies import checked_prefixes, sessions
from tests.unit.projections.history.fold_oracle import checked_statuses

EXAMPLES = 60


@settings(max_examples=EXAMPLES, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)), st.data())
def test_incremental_statuses_equal_the_full_classification_after_every_prefix(
    log: list[LoggedEvent], data: st.DataObject
) -> None:
    checked = data.draw(checked_prefixes(len(log)))
    state: HistoryState | None = None
    statuses: dict[Offset, EventStatus] = {}
    for length, record in enumerate(log, start=1):
        state, changes = advance(state, record.offset, record.envelope)
        assert changes[-1].offset == record.offset, "the new record's status comes last"
        earlier = [change.offset for change in changes[:-1]]
        assert earlier == sorted(earlier)
        assert all(o < record.offset for o in earlier)
        for change in changes:
            assert change.offset == record.offset or statuses[change.offset] != change.status
            statuses[change.offset] = change.status
        if length in checked:
            assert statuses == classify_session(log[:length]), f"after {length}"


@settings(max_examples=EXAMPLES, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)))
def test_statuses_say_what_the_fold_and_its_view_say(log: list[LoggedEvent]) -> None:
    # Stale and creation records and the incremental writer offset included (fold_oracle.py).
    checked_statuses(log)


@settings(max_examples=EXAMPLES, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)))
def test_live_history_is_the_live_records_in_offset_order(log: list[LoggedEvent]) -> None:
    statuses = classify_session(log)
    history = live_history(log)
    assert [r.offset for r in history] == [o for o, s in statuses.items() if s == "live"]
    assert all(record in log for record in history)


@settings(max_examples=EXAMPLES, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)), st.data())
def test_a_state_rebuilt_from_stored_rows_goes_on_as_the_one_pass(
    log: list[LoggedEvent], data: st.DataObject
) -> None:
    # The rows hold each record's bytes; a restarted sink decodes them and advances again.
    split = data.draw(st.integers(0, len(log)))
    one_pass: HistoryState | None = None
    for record in log:
        one_pass, _ = advance(one_pass, record.offset, record.envelope)
    rebuilt: HistoryState | None = None
    for record in log[:split]:
        rebuilt, _ = advance(rebuilt, record.offset, decode_envelope(encode(record.envelope)))
    changed: dict[Offset, EventStatus] = {}
    for record in log[split:]:
        rebuilt, changes = advance(rebuilt, record.offset, record.envelope)
        changed.update(changes)
    assert rebuilt is not None
    assert one_pass is not None
    assert statuses_of(rebuilt) == statuses_of(one_pass)
    assert rebuilt.writer_offset == one_pass.writer_offset
    whole = classify_session(log)
    assert all(whole[offset] == status for offset, status in changed.items())
