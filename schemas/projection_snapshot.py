"""The record of the `projections` topic: what subscribers read about a session."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from schemas.envelope import ValidSessionKey
from schemas.json_bounds import INT64_MAX
from schemas.keys import Offset, TenantId, check_tenant_owns_session
from schemas.numbers import Count, FiniteFloat, LogOffset, TokenCount

AppliedOffset = Annotated[Offset, Strict(), Field(ge=-1, le=INT64_MAX)]
"""The offset of the last record a projection applied; ``-1`` before the first."""


class CompactionBoundary(BaseModel):
    """The latest surviving summary: the range of raw events it masks.

    `summary_offset` is the summary's offset on its session's partition; a
    summary a fork inherited is another session's record, which
    `inherited_from` names.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary_event_id: str
    summary_offset: LogOffset
    inherited_from: ValidSessionKey | None = None
    start_timestamp: FiniteFloat
    end_timestamp: FiniteFloat
    request_id: str | None = None


class TokenUsage(BaseModel):
    """Prompt and response tokens the model reported in a session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    last_prompt_tokens: TokenCount | None = None
    total_prompt_tokens: Count = 0
    total_candidates_tokens: Count = 0


class ProjectionSnapshot(BaseModel):
    """A session's projection as published on the log-compacted `projections` topic.

    Bounded in size whatever the session's length: counters, the boundary and
    a fingerprint of the assembled context, never the context itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    tenant: TenantId
    session_key: ValidSessionKey
    last_offset: AppliedOffset
    boundary: CompactionBoundary | None = None
    invocations_total: Count
    invocations_since_compaction: Count
    token_usage: TokenUsage
    context_items: Count
    context_fingerprint: str
    in_flight_request_id: str | None = None

    @model_validator(mode="after")
    def _tenant_owns_session(self) -> Self:
        check_tenant_owns_session(self.tenant, self.session_key)
        return self
