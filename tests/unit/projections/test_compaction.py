"""The post-invocation hook's window: the seed of its token trigger."""

from __future__ import annotations

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from tests.support.events import seeded_token_example

TOKEN = CompactionConfig(token_threshold=50, event_retention_size=2)


def test_the_token_seed_gets_the_invocation_id_given() -> None:
    window = select_post_invocation_window(
        seeded_token_example(), TOKEN, seed_invocation_id="fresh-2"
    )
    assert window is not None
    assert window.event_ids == ("e4", "e5")
    assert window.seed is not None
    assert window.seed.invocation_id == "fresh-2"


def test_the_token_seed_invocation_id_is_seed_unless_given() -> None:
    window = select_post_invocation_window(seeded_token_example(), TOKEN)
    assert window is not None
    assert window.seed is not None
    assert window.seed.invocation_id == "seed"
