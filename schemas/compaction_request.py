"""The record of the `compaction-requests` topic: summarize exactly this range."""

from __future__ import annotations

import hashlib
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.envelope import ValidSessionKey
from schemas.event import Content
from schemas.keys import Offset, SessionKey, TenantId

CompactionTrigger = Literal["sliding_window", "token_threshold"]


class SummarySeed(BaseModel):
    """The previous summary, rolled into a token-threshold window as its first item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timestamp: float
    author: str
    branch: str | None = None
    content: Content


class CompactionRequest(BaseModel):
    """A projector's decision that one range of one session should be summarized.

    The range is named by offsets (what the summarizer reads back from
    `events`) and by ADK timestamps (what the summary will mask). The request
    id is derived from the session and the offsets, so deciding the same
    window twice yields the same id and the projector can apply at most one
    summary per request.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    request_id: str = Field(min_length=1)
    tenant: TenantId
    session_key: ValidSessionKey
    trigger: CompactionTrigger
    # Offsets of the events handed to the summarizer, in the order handed.
    event_offsets: tuple[Offset, ...] = Field(min_length=1)
    event_ids: tuple[str, ...]
    start_timestamp: float
    end_timestamp: float
    seed: SummarySeed | None = None
    # The offset of the event whose application decided this request.
    decided_at_offset: Offset
    attempt: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _ids_match_offsets(self) -> Self:
        if len(self.event_ids) != len(self.event_offsets):
            raise ValueError(
                f"{len(self.event_ids)} event ids for {len(self.event_offsets)} offsets"
            )
        return self

    @property
    def start_offset(self) -> Offset:
        """The first offset the summarizer reads."""
        return min(self.event_offsets)

    @property
    def end_offset(self) -> Offset:
        """The last offset the summarizer reads."""
        return max(self.event_offsets)


def compaction_request_id(
    session_key: SessionKey, trigger: CompactionTrigger, event_offsets: tuple[Offset, ...]
) -> str:
    """The deterministic id of the request to summarize these offsets of a session.

    Example: the same session, trigger and offsets always give the same 32 hex
    digits; any other offset gives another id.
    """
    digest = hashlib.sha256()
    digest.update(session_key.encode())
    digest.update(b"\x00" + trigger.encode() + b"\x00")
    digest.update(",".join(str(offset) for offset in event_offsets).encode())
    return digest.hexdigest()[:32]
