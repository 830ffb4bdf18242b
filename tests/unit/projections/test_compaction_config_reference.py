"""Compaction configs (reference §2): which the reference accepts and which it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from projections.compaction.config import CompactionConfig


def _sliding(interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(compaction_interval=interval, overlap_size=overlap)


def _token(threshold: int, retention: int) -> CompactionConfig:
    return CompactionConfig(token_threshold=threshold, event_retention_size=retention)


# --------------------------------------------------------------------------- §2 config


@pytest.mark.parametrize(
    "fields",
    [
        {"token_threshold": 10},
        {"event_retention_size": 1},
        {"compaction_interval": 2},
        {"overlap_size": 0},
        {"compaction_interval": 2, "overlap_size": 0, "token_threshold": 10},
        {},
        {"compaction_interval": 0, "overlap_size": 0},
        {"compaction_interval": 2, "overlap_size": -1},
        {"token_threshold": 0, "event_retention_size": 1},
        {"token_threshold": 10, "event_retention_size": -1},
        {"compaction_interval": 2, "overlap_size": 0, "summarizer_model": "x"},
    ],
)
def test_invalid_configs_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CompactionConfig.model_validate(fields)


def test_valid_configs_are_accepted() -> None:
    token_only = _token(1, 0)
    assert token_only.has_token_threshold
    assert not token_only.has_sliding_window
    sliding_only = _sliding(1, 0)
    assert sliding_only.has_sliding_window
    assert not sliding_only.has_token_threshold
    both = CompactionConfig(
        compaction_interval=1, overlap_size=0, token_threshold=1, event_retention_size=0
    )
    assert both.has_sliding_window
    assert both.has_token_threshold
