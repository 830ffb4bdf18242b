"""The session's token tally: totals of every report, the last prompt count of the live events."""

from __future__ import annotations

from projections.token_usage import TokenTally, add_reported
from tests.support.events import text_event


def test_a_report_of_prompt_tokens_alone_adds_to_the_prompt_total_only() -> None:
    event = text_event(
        "a1", "i1", 100.0, author="agent", usage_metadata={"prompt_token_count": 400}
    )
    assert add_reported(TokenTally(), event) == TokenTally(None, 400, 0)


def test_a_report_of_candidates_tokens_alone_adds_nothing_to_the_prompt_total() -> None:
    event = text_event(
        "a1", "i1", 100.0, author="agent", usage_metadata={"candidates_token_count": 7}
    )
    assert add_reported(TokenTally(None, 10, 5), event) == TokenTally(None, 10, 12)
