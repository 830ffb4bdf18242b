"""A request no valid answer could name is refused with the problem, one line long."""

from __future__ import annotations

import math

import pytest

from schemas.keys import Offset, TenantId
from summarizer_worker.request_validity import MAX_REQUEST_ID_CHARS, request_problem
from tests.support.events import request_for, request_with, session


def test_a_request_the_projector_writes_has_no_problem() -> None:
    assert request_problem(request_for(session(2))) is None


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"tenant": TenantId("evil")}, "tenant 'evil' does not own session 'acme/support/u1/s1'"),
        ({"request_id": "r" * 300}, "(300 characters) is not 1 to 64"),
        ({"request_id": "r\nFORGED"}, "request id 'r\\x0aFORGED'"),
        ({"event_offsets": (Offset(-1),)}, "offset -1 is negative"),
        ({"decided_at_offset": Offset(-5)}, "offset -5 is negative"),
        ({"start_timestamp": math.inf}, "not finite"),
        ({"end_timestamp": math.nan}, "not finite"),
    ],
    ids=["tenant", "long-id", "id-newline", "offset", "decided-at", "inf", "nan"],
)
def test_a_request_no_valid_answer_can_name_has_a_problem(
    changes: dict[str, object], problem: str
) -> None:
    found = request_problem(request_with(**changes))
    assert found is not None
    assert problem in found
    assert "\n" not in found


def test_an_id_of_the_longest_length_allowed_is_fine() -> None:
    assert request_problem(request_with(request_id="a" * MAX_REQUEST_ID_CHARS)) is None
    assert request_problem(request_with(request_id="a" * (MAX_REQUEST_ID_CHARS + 1))) is not None
