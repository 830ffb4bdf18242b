"""How far back the live view's suffix reaches for the sliding window and the token tail.

Hand-worked sessions (positions are event ids, ``e3`` the fourth event): the positions
the rules of projections/live_view/README.md keep, and ADK 2.13.0's own readers (the
sliding-window and token-threshold compactions, the prompt count the token trigger reads,
contents, routing) answering on them as on the whole session
(:func:`tests.support.live_view_sessions.assert_kept`).
"""

from __future__ import annotations

import pytest

from schemas.event import Event
from tests.support.live_view_sessions import assert_kept, exchange, said, summary


def test_the_window_counts_only_unscoped_invocations_and_summaries() -> None:
    """A scoped summary ending later does not make the unscoped invocation old."""
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 3.0),
        *exchange(3, "inv1", 4.0),
        said(5, "inv1", 5.5, "worker", isolation_scope="X"),
        summary(6, 5.5, 5.5, 6.0, isolation_scope="X"),
    ]
    assert_kept(events, 1, list(range(7)))  # the next window starts with inv0


@pytest.mark.parametrize(("overlap", "kept"), [(0, [2, 3, 4]), (1, [0, 1, 2, 3, 4])])
def test_before_any_summary_end_every_invocation_after_instant_zero_is_new(
    overlap: int, kept: list[int]
) -> None:
    """A summary ending at 0 is no last summary: inv0 (all at 0) is old, inv1 is new."""
    events = [
        said(0, "inv0", 0.0),
        said(1, "inv0", 0.0, "root"),
        summary(2, 0.0, 0.0, 0.1),
        said(3, "inv1", 0.5),
        said(4, "inv1", 0.6, "root"),
    ]
    assert_kept(events, overlap, kept)


def test_the_overlap_counts_invocations_not_the_summaries_between_them() -> None:
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 3.0),
        *exchange(3, "inv1", 4.0),
        summary(5, 4.0, 5.0, 6.0),
        *exchange(6, "inv2", 7.0),
    ]
    assert_kept(events, 2, list(range(8)))  # two invocations before inv2: from inv0


def test_an_invocation_is_new_by_its_latest_timestamp_not_its_last_event() -> None:
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 5.0, 6.0),
        said(3, "inv1", 10.0),  # inv1 reaches 10, past the summary: new
        said(4, "inv1", 4.0, "root"),  # written last, timestamped inside the summary
    ]
    assert_kept(events, 1, list(range(5)))


def _counted(position: int, invocation: str, timestamp: float) -> Event:
    """An agent reply that records the prompt size the token trigger reads."""
    return said(position, invocation, timestamp, "root", usage_metadata={"prompt_token_count": 777})


@pytest.mark.parametrize("scoped", [False, True])
def test_the_token_tail_keeps_everything_after_the_newest_summary(scoped: bool) -> None:
    """A count recorded after the newest summary is read, even where a summary covers it.

    The only summary ends at 0, so nothing is a window's last end; a scoped summary
    elsewhere must not stand in for the unscoped scope's own newest.
    """
    events = [
        said(0, "inv0", 0.0),
        said(1, "inv0", 0.0, "root"),
        summary(2, 0.0, 0.0, 0.5),
        _counted(3, "inv0", 0.0),  # covered by e2, after it in the stream
        *exchange(4, "inv1", 1.0),
    ]
    if scoped:
        events += [
            said(6, "inv1", 3.0, "worker", isolation_scope="X"),
            summary(7, 3.0, 3.0, 4.0, isolation_scope="X"),
        ]
    assert_kept(events, 0, list(range(2, len(events))))


def test_the_token_tail_keeps_from_the_newest_summary_with_an_end() -> None:
    """The window's last end comes from e5 (e6 ends at 0): e5 stays though e2 contains it."""
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 0.0, 6.0, 2.5),
        *exchange(3, "inv1", 3.0),
        summary(5, 3.0, 4.0, 5.2),
        summary(6, 0.0, 0.0, 5.3),
        said(7, "inv2", 5.5),  # new since e5's end, not since e2's
        said(8, "inv2", 5.8, "root"),
        *exchange(9, "inv3", 7.0),
    ]
    assert_kept(events, 0, [2, 5, 6, 7, 8, 9, 10])


def test_the_token_candidates_follow_the_newest_summary_not_the_first() -> None:
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 2.5),
        said(3, "inv1", 3.0),
        said(4, "inv1", 5.0, "root"),
        summary(5, 3.0, 5.0, 6.0),
        *exchange(6, "inv2", 7.0),
    ]
    assert_kept(events, 0, [2, 5, 6, 7])


def test_the_token_candidates_follow_the_newest_summary_no_other_contains() -> None:
    """e8 lies inside e4 and is dropped by ADK: the candidates follow e7's end, 9."""
    scoped = {"isolation_scope": "X"}
    events = [
        *exchange(0, "inv0", 1.0, "worker", **scoped),
        *exchange(2, "inv1", 4.0, "worker", **scoped),
        summary(4, 1.0, 5.0, 5.5, **scoped),
        said(5, "inv2", 6.0, **scoped),
        said(6, "inv2", 9.0, "worker", **scoped),
        summary(7, 4.0, 9.0, 9.5, **scoped),
        summary(8, 3.0, 5.0, 9.6, **scoped),
        *exchange(9, "inv3", 10.0, "worker", **scoped),
    ]
    assert_kept(events, 0, [4, 7, 8, 9, 10])


def test_the_token_tail_keeps_the_newest_invocations_last_event() -> None:
    events = [
        said(0, "inv0", 1.0),
        said(1, "inv0", 1.5),
        said(2, "inv0", 2.0),
        summary(3, 1.0, 2.0, 3.0),
    ]
    assert_kept(events, 0, [2, 3])
