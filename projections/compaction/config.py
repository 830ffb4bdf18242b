"""ADK's ``EventsCompactionConfig``: which compaction triggers run (reference §2), and who.

Pure value type. The summarizer is not part of it: the summarizer worker
chooses its backend from its own settings. ``owner`` says who compacts the
app (:mod:`projections.compaction.ownership`): the pipeline, by these
triggers, or ADK's runner, whose summary events the pipeline only folds.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CompactionConfig(BaseModel):
    """The app's compaction settings; at least one trigger pair must be set.

    Attributes:
        compaction_interval: Sliding window: how many new invocations trigger
            a summary (> 0).
        overlap_size: Sliding window: how many older invocations to re-include
            (>= 0).
        token_threshold: Token trigger: observed prompt tokens at or above
            this compact (> 0).
        event_retention_size: Token trigger: how many newest raw events stay
            raw (>= 0).
        owner: ``pipeline`` (the default): the projector requests summaries by
            these triggers. ``adk``: ADK's runner compacts (the App's
            ``events_compaction_config``); the projector folds its summary
            events and requests none, so the triggers may be left unset.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    compaction_interval: int | None = Field(default=None, gt=0)
    overlap_size: int | None = Field(default=None, ge=0)
    token_threshold: int | None = Field(default=None, gt=0)
    event_retention_size: int | None = Field(default=None, ge=0)
    owner: Literal["adk", "pipeline"] = "pipeline"

    @model_validator(mode="after")
    def _pairs_are_complete(self) -> Self:
        _require_pair(self, "token_threshold", "event_retention_size")
        _require_pair(self, "compaction_interval", "overlap_size")
        triggered = self.has_sliding_window or self.has_token_threshold
        if self.owner == "pipeline" and not triggered:
            raise ValueError(
                "no compaction trigger: set compaction_interval and overlap_size, "
                "or token_threshold and event_retention_size (or owner 'adk')"
            )
        return self

    @property
    def has_sliding_window(self) -> bool:
        """Whether the sliding-window pair is set."""
        return self.compaction_interval is not None and self.overlap_size is not None

    @property
    def has_token_threshold(self) -> bool:
        """Whether the token-threshold pair is set."""
        return self.token_threshold is not None and self.event_retention_size is not None


def _require_pair(config: CompactionConfig, first: str, second: str) -> None:
    values = {name: getattr(config, name) for name in (first, second)}
    if (values[first] is None) != (values[second] is None):
        missing = first if values[first] is None else second
        given = second if missing == first else first
        raise ValueError(
            f"{given}={values[given]!r} needs {missing}: "
            f"{first} and {second} must both be set or both be null"
        )
