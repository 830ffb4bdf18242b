"""The kept live view, advanced batch by batch, against ``select_live`` of the whole held list.

Generated sessions (retries, chunks, refusals, deletions, rewinds, summaries) are cut into
random batches; after each one the view :func:`batch_view` keeps (recomputed from the view's
own events when it can, from the whole list when it answers None) must equal
``select_live`` over every held record so far, whose statuses come from ``classify_session``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.history.classification import classify_session
from projections.live_view.kept_view import HELD, KeptView, batch_view, view_of
from projections.live_view.selection import select_live
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.strategies import sessions


def _expected(records: list[LoggedEvent], overlap: int) -> tuple[list[int], int | None]:
    """The offsets the whole held list's view keeps, and where its suffix starts."""
    statuses = classify_session(records)
    held = [r for r in records if statuses[r.offset] in HELD]
    view = select_live([r.envelope.event for r in held], overlap)
    start = held[view.suffix_start].offset if view.suffix_start < len(held) else None
    return [held[p].offset for p in view.kept], start


def _held(records: list[LoggedEvent]) -> list[tuple[int, Event]]:
    statuses = classify_session(records)
    return [(r.offset, r.envelope.event) for r in records if statuses[r.offset] in HELD]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sessions(8, refusals=True, deletions=True), st.integers(0, 3), st.data())
def test_the_kept_view_equals_the_whole_lists_after_every_batch(
    records: list[LoggedEvent], overlap: int, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, len(records)), max_size=8)) | {len(records)})
    view: KeptView | None = None
    done = 0
    for cut in cuts:
        prefix = records[:cut]
        statuses = classify_session(prefix)
        end = prefix[-1].offset + 1
        batch = [(r.offset, r.envelope.event, str(statuses[r.offset])) for r in records[done:cut]]
        advanced = batch_view(view, batch, overlap, end)
        view = advanced if advanced is not None else view_of(_held(prefix), overlap, end)
        kept, start = _expected(prefix, overlap)
        assert [offset for offset, _ in view.kept] == kept
        if start is not None:
            assert view.live_from == start
        assert all(offset >= view.live_from for offset in kept if offset not in view.extra)
        done = cut
