"""The record of the `projections` topic: what subscribers read about a session."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import ValidSessionKey
from schemas.keys import Offset, TenantId


class CompactionBoundary(BaseModel):
    """The latest surviving summary: the range of raw events it masks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary_event_id: str
    summary_offset: Offset
    start_timestamp: float
    end_timestamp: float
    request_id: str | None = None


class TokenUsage(BaseModel):
    """Prompt and response tokens the model reported in a session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    last_prompt_tokens: int | None = None
    total_prompt_tokens: int = 0
    total_candidates_tokens: int = 0


class ProjectionSnapshot(BaseModel):
    """A session's projection as published on the log-compacted `projections` topic.

    Bounded in size whatever the session's length: counters, the boundary and
    a fingerprint of the assembled context, never the context itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    tenant: TenantId
    session_key: ValidSessionKey
    last_offset: Offset
    boundary: CompactionBoundary | None = None
    invocations_total: int = Field(ge=0)
    invocations_since_compaction: int = Field(ge=0)
    token_usage: TokenUsage
    context_items: int = Field(ge=0)
    context_fingerprint: str
    in_flight_request_id: str | None = None
