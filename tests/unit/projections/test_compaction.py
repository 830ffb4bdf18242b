"""The post-invocation hook's window: the seed of its token trigger."""

from __future__ import annotations

from projections.compaction import select_post_invocation_window
from projections.compaction_config import CompactionConfig
from schemas.event import Event
from tests.support.events import summary_event, text_event

TOKEN = CompactionConfig(token_threshold=50, event_retention_size=2)


def _seeded_events() -> list[Event]:
    """Reference §5.6: e1, e2, summary P [100, 101], e4..e7, e7 counts 100."""
    return [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        summary_event("p", 100.0, 101.0, 102.0, "the summary P"),
        text_event("e4", "i2", 103),
        text_event("e5", "i2", 104, author="agent"),
        text_event("e6", "i3", 105),
        text_event("e7", "i3", 106, author="agent", usage_metadata={"prompt_token_count": 100}),
    ]


def test_the_token_seed_gets_the_invocation_id_given() -> None:
    window = select_post_invocation_window(_seeded_events(), TOKEN, seed_invocation_id="fresh-2")
    assert window is not None
    assert window.event_ids == ("e4", "e5")
    assert window.seed is not None
    assert window.seed.invocation_id == "fresh-2"


def test_the_token_seed_invocation_id_is_seed_unless_given() -> None:
    window = select_post_invocation_window(_seeded_events(), TOKEN)
    assert window is not None
    assert window.seed is not None
    assert window.seed.invocation_id == "seed"
