"""The session's token tally: totals of every report, the last prompt count of the live events."""

from __future__ import annotations

from projections.fold.token_usage import TokenTally, add_reported, recount_last
from tests.support.events import summary_event, text_event


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


def test_recounting_reads_the_newest_unscoped_count_of_any_author_and_keeps_the_totals() -> None:
    live = [
        text_event("a1", "i1", 100.0, author="agent", usage_metadata={"prompt_token_count": 400}),
        text_event("h1", "i1", 101.0, author="helper", usage_metadata={"prompt_token_count": 300}),
        text_event(
            "t1", "i1", 102.0, isolation_scope="t", usage_metadata={"prompt_token_count": 5}
        ),
    ]
    assert recount_last(TokenTally(900, 10, 20), live) == TokenTally(300, 10, 20)


def test_recounting_after_the_newest_summary_finds_no_count() -> None:
    live = [
        text_event("a1", "i1", 100.0, author="agent", usage_metadata={"prompt_token_count": 400}),
        summary_event("s1", 100.0, 100.0, 101.0),
    ]
    assert recount_last(TokenTally(400, 10, 20), live) == TokenTally(None, 10, 20)
