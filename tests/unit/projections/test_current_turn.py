"""Where the current turn starts (reference §9)."""

from __future__ import annotations

from projections.contents.contents_request import ContentsRequest
from projections.contents.current_turn import find_turn_start


def test_no_turn_start_in_an_empty_session() -> None:
    assert find_turn_start([], ContentsRequest(agent_name="agent")) is None
