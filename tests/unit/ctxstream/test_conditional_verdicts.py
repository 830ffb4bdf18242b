"""The verdict a writer reads off ``write-verdicts``, by hand from the rule: exact or an error.

A refused offset is refused; one above the floor was applied (and is then the writer
offset right after it); one at or below the floor and not listed is unknown, raised.
The answers themselves are the fold's (:func:`projections.fold.verdicts.write_verdicts`).
"""

from __future__ import annotations

import pytest

from ctxstream.appends.conditional import UnknownVerdictError, Verdict, verdict_of
from projections.fold.conditions import MAX_REFUSALS
from projections.fold.projection import project
from projections.fold.verdicts import write_verdicts
from schemas.deletion_mark import deletion_event
from schemas.read_protocol import WriteVerdicts
from tests.support.conditional_records import creation_record
from tests.support.events import SESSION
from tests.unit.projections.test_conditions import at, text


def verdicts(**fields: object) -> WriteVerdicts:
    base: dict[str, object] = {
        "session_key": SESSION,
        "last_offset": 20,
        "writer_offset": 12,
        "refused": [14, 18],
        "refused_floor": 10,
        "deleted": False,
    }
    return WriteVerdicts.model_validate({**base, **fields})


def test_a_listed_offset_is_refused_with_the_writer_that_came_first() -> None:
    assert verdict_of(verdicts(), 14) == Verdict(14, False, 12, False)


def test_an_offset_above_the_floor_not_listed_was_applied_and_is_its_own_writer() -> None:
    assert verdict_of(verdicts(), 12) == Verdict(12, True, 12, False)
    assert verdict_of(verdicts(writer_offset=19), 16) == Verdict(16, True, 16, False)


@pytest.mark.parametrize("offset", [3, 10])
def test_an_offset_at_or_below_the_floor_not_listed_is_unknown(offset: int) -> None:
    with pytest.raises(UnknownVerdictError, match="no longer known"):
        verdict_of(verdicts(), offset)


def test_an_answer_before_the_offset_is_no_verdict() -> None:
    with pytest.raises(UnknownVerdictError, match="before 21"):
        verdict_of(verdicts(), 21)


def test_the_fold_answers_deleted_for_a_session_never_created_or_deleted() -> None:
    assert write_verdicts(project(SESSION, [text(3, expected=7)])).deleted
    created = [creation_record(1, 1, {"a": 1})]
    assert not write_verdicts(project(SESSION, created)).deleted
    gone = [*created, at(2, deletion_event(event_id="d", timestamp=1.0)), text(4, expected=1)]
    answer = write_verdicts(project(SESSION, gone))
    assert (answer.deleted, answer.writer_offset, answer.refused) == (True, -1, [4])
    many = [text(1), *(text(offset, expected=0) for offset in range(2, MAX_REFUSALS + 3))]
    answer = write_verdicts(project(SESSION, many))
    assert answer.refused_floor == 2
    with pytest.raises(UnknownVerdictError):
        verdict_of(answer, 2)
    assert verdict_of(answer, 3).accepted is False
