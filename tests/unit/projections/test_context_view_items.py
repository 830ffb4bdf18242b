"""How many events a context view shows: what assembling its contents costs."""

from __future__ import annotations

from projections.contents.context_view import view_events, visible_items
from projections.fold.projection import SessionProjection, apply
from tests.support.events import exchange, logged, session_key, summary_event


def test_the_visible_items_are_the_events_the_view_shows() -> None:
    key = session_key(1)
    events = [e for n in range(6) for e in exchange(n, 100.0 + 10 * n)]
    summary = summary_event("s1", 100.0, 131.0, 155.0, "the first four invocations")
    records = logged([*events, summary], list(range(len(events) + 1)), key)
    projection = SessionProjection(key)
    counts = []
    for record in records:
        projection = apply(projection, record)
        counts.append(visible_items(projection.view))
        # the cheap count bounds what the view assembles, and equals it for a plain view
        assert len(view_events(projection.view)) <= counts[-1]
    assert counts[: len(events)] == list(range(1, len(events) + 1))
    assert counts[-1] < counts[-2]  # the summary masks what it covers
