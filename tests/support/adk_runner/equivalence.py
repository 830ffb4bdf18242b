"""The comparisons of an equivalence test, for ADK-owned and pipeline-owned compaction.

ADK-owned: both runs' summaries come from ADK's scripted summarizer, so the
contents must be equal as they are (call ids aside). Pipeline-owned: the run
under test has no compaction in its App and the pipeline summarizes, so its
summaries are compared with ADK's by the range of events they cover; the
range is read from `history`, a full history of the run's session (for a
bounded view, a ``view=full`` read of the same session).
"""

from __future__ import annotations

from collections.abc import Sequence

from google.adk.events.event import Event

from tests.support.adk_runner.normalize import normalized_calls, normalized_events
from tests.support.adk_runner.script import RunResult


def assert_adk_owned_equivalent(run: RunResult, reference: RunResult, *, full: bool) -> None:
    """`run`'s models saw what `reference`'s saw; with `full`, the sessions hold the same events."""
    assert normalized_calls(run.calls, run.events, summaries_by_range=False) == normalized_calls(
        reference.calls, reference.events, summaries_by_range=False
    )
    if full:
        assert normalized_events(run.events, summaries_by_range=False) == normalized_events(
            reference.events, summaries_by_range=False
        )


def assert_pipeline_owned_equivalent(
    run: RunResult, reference: RunResult, *, history: Sequence[Event] | None = None
) -> None:
    """`run`'s models saw `reference`'s contents, each summary standing for the range it covers."""
    own = run.events if history is None else history
    assert normalized_calls(run.calls, own, summaries_by_range=True) == normalized_calls(
        reference.calls, reference.events, summaries_by_range=True
    )
