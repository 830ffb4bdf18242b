from __future__ import annotations

import pytest
from pydantic import ValidationError

from projections.compaction.config import CompactionConfig


def test_sliding_only_and_token_only_are_accepted() -> None:
    sliding = CompactionConfig(compaction_interval=2, overlap_size=0)
    token = CompactionConfig(token_threshold=100, event_retention_size=0)
    assert (sliding.has_sliding_window, sliding.has_token_threshold) == (True, False)
    assert (token.has_sliding_window, token.has_token_threshold) == (False, True)


def test_both_pairs_together_are_accepted() -> None:
    config = CompactionConfig.model_validate(
        {
            "compaction_interval": 1,
            "overlap_size": 1,
            "token_threshold": 1,
            "event_retention_size": 1,
        }
    )
    assert config.has_sliding_window
    assert config.has_token_threshold


def test_no_trigger_is_rejected() -> None:
    with pytest.raises(ValidationError, match="no compaction trigger"):
        CompactionConfig()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"compaction_interval": 3}, "compaction_interval=3 needs overlap_size"),
        ({"overlap_size": 1}, "overlap_size=1 needs compaction_interval"),
        ({"token_threshold": 10}, "token_threshold=10 needs event_retention_size"),
        ({"event_retention_size": 0}, "event_retention_size=0 needs token_threshold"),
    ],
)
def test_partial_pair_is_rejected_naming_the_missing_key(
    fields: dict[str, int], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        CompactionConfig.model_validate(fields)


@pytest.mark.parametrize(
    ("fields", "bad_key"),
    [
        ({"compaction_interval": 0, "overlap_size": 0}, "compaction_interval"),
        ({"compaction_interval": 1, "overlap_size": -1}, "overlap_size"),
        ({"token_threshold": 0, "event_retention_size": 0}, "token_threshold"),
        ({"token_threshold": 1, "event_retention_size": -1}, "event_retention_size"),
    ],
)
def test_out_of_range_values_are_rejected(fields: dict[str, int], bad_key: str) -> None:
    with pytest.raises(ValidationError) as info:
        CompactionConfig.model_validate(fields)
    assert info.value.errors()[0]["loc"] == (bad_key,)


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match="summarizer"):
        CompactionConfig.model_validate(
            {"compaction_interval": 1, "overlap_size": 0, "summarizer": "x"}
        )


def test_config_is_frozen() -> None:
    config = CompactionConfig(compaction_interval=1, overlap_size=0)
    with pytest.raises(ValidationError):
        config.overlap_size = 2  # type: ignore[misc]  # assigning to a frozen model is the point
