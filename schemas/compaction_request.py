"""The record of the `compaction-requests` topic: summarize exactly this range.

A request is validated whole when it is decoded, before the summarizer reads
a record or calls a model for it: its tenant owns its session, its id is a
short token safe to log and to embed in a summary's idempotency key, its
offsets are Kafka offsets, its attempt is bounded, and its seed (text the
summarizer is handed verbatim) is bounded in parts and characters.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    Strict,
    field_serializer,
    model_serializer,
    model_validator,
)

from schemas.envelope import ValidSessionKey
from schemas.event import Content, JsonObject, content_as_given
from schemas.json_bounds import INT64_MAX, INT64_MIN
from schemas.keys import Offset, SessionKey, TenantId, check_tenant_owns_session
from schemas.numbers import FiniteFloat, LogOffset

CompactionTrigger = Literal["sliding_window", "token_threshold"]

#: Characters of a request id. The projector's ids are 32 hex digits
#: (:func:`compaction_request_id`); the bound keeps a summary's idempotency
#: key, which embeds the id, within its 256 characters.
MAX_REQUEST_ID_LENGTH: Final = 64
#: What a request id may hold: letters, digits and ``._:-``, nothing that
#: needs escaping in a log line, a key or a file name.
REQUEST_ID_PATTERN: Final = r"^[A-Za-z0-9._:-]+$"
#: Emissions of one request (the projector's ``compaction_request_max_attempts``
#: is at most this).
MAX_ATTEMPTS: Final = 1_000
#: Parts of a seed's content. A summary the pipeline writes has one.
MAX_SEED_PARTS: Final = 1_000
#: Characters of text in a seed's content, all parts together: far above a
#: summary the pipeline writes, far below what makes a prompt unworkable.
MAX_SEED_TEXT_CHARS: Final = 200_000

RequestId = Annotated[
    str, Field(min_length=1, max_length=MAX_REQUEST_ID_LENGTH, pattern=REQUEST_ID_PATTERN)
]
Attempt = Annotated[int, Strict(), Field(ge=1, le=MAX_ATTEMPTS)]


def seed_problem(content: Content) -> str | None:
    """Why `content` cannot be a request's seed, or None when it can.

    The projector asks before it rolls a summary into a window as its seed;
    the request's validation asks again.

    Example: one part of 1,000 characters -> None; 1,001 parts -> ``"1001
    parts, at most 1000"``.
    """
    parts = content.parts or []
    if len(parts) > MAX_SEED_PARTS:
        return f"{len(parts)} parts, at most {MAX_SEED_PARTS}"
    text = sum(len(part.text) for part in parts if part.text is not None)
    if text > MAX_SEED_TEXT_CHARS:
        return f"{text} characters of text, at most {MAX_SEED_TEXT_CHARS}"
    return None


class SummarySeed(BaseModel):
    """The previous summary, rolled into a token-threshold window as its first item."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timestamp: FiniteFloat
    author: str
    branch: str | None = None
    content: Content

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        if (problem := seed_problem(self.content)) is not None:
            raise ValueError(f"seed content too large: {problem}")
        return self

    @field_serializer("content")
    def _content_as_given(self, content: Content) -> JsonObject:
        return content_as_given(content)


InheritedOffset = Annotated[Offset, Strict(), Field(ge=INT64_MIN, lt=0)]
"""A window event's place in a fork's inherited history: negative, counted back from the fork."""


WindowOffset = Annotated[Offset, Strict(), Field(ge=INT64_MIN, le=INT64_MAX)]
"""An event of a window: its offset, or its inherited place (:data:`InheritedOffset`)."""


class InheritedEvent(BaseModel):
    """Where a window event that a fork inherited is on `events`.

    Example: ``{"offset": -3, "session_key": "acme/s1", "origin_offset": 41}``:
    the fork's inherited event ``-3`` is offset 41 of session ``acme/s1``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    offset: InheritedOffset
    session_key: ValidSessionKey
    origin_offset: LogOffset


class CompactionRequest(BaseModel):
    """A projector's decision that one range of one session should be summarized.

    The range is named by offsets (what the summarizer reads back from
    `events`) and by ADK timestamps (what the summary will mask). The request
    id is derived from the session and the offsets, so deciding the same
    window twice yields the same id and the projector can apply at most one
    summary per request.

    A fork's window may hold events it inherited (:mod:`projections.fold.fork`):
    their offsets are negative, `inherited` says where each is on the log,
    and `fork_offset` is the fork's own first record, from which the
    summarizer reads the fork's records.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    request_id: RequestId
    tenant: TenantId
    session_key: ValidSessionKey
    trigger: CompactionTrigger
    # Offsets of the events handed to the summarizer, in the order handed.
    # (Negative: an inherited event, which `inherited` names.)
    event_offsets: tuple[WindowOffset, ...] = Field(min_length=1)
    event_ids: tuple[str, ...]
    start_timestamp: FiniteFloat
    end_timestamp: FiniteFloat
    seed: SummarySeed | None = None
    # The offset of the event whose application decided this request.
    decided_at_offset: LogOffset
    attempt: Attempt = 1
    inherited: tuple[InheritedEvent, ...] = ()
    fork_offset: LogOffset | None = None

    @model_validator(mode="after")
    def _tenant_owns_session(self) -> Self:
        check_tenant_owns_session(self.tenant, self.session_key)
        return self

    @model_validator(mode="after")
    def _ids_match_offsets(self) -> Self:
        if len(self.event_ids) != len(self.event_offsets):
            raise ValueError(
                f"{len(self.event_ids)} event ids for {len(self.event_offsets)} offsets"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_fork_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A request of a session that is no fork is written as before forks existed.
        data: dict[str, Any] = handler(self)
        if not self.inherited:
            data.pop("inherited", None)
            data.pop("fork_offset", None)
        return data

    @model_validator(mode="after")
    def _inherited_named(self) -> Self:
        named = {event.offset for event in self.inherited}
        negative = {offset for offset in self.event_offsets if offset < 0}
        if named != negative or len(named) != len(self.inherited):
            raise ValueError(
                "inherited must name each negative event offset once: "
                f"{sorted(negative)} in the window, {sorted(named)} named"
            )
        if (self.fork_offset is None) != (not self.inherited):
            raise ValueError("fork_offset is set exactly when the window holds inherited events")
        for event in self.inherited:
            check_tenant_owns_session(self.tenant, event.session_key)
        return self

    @property
    def start_offset(self) -> Offset:
        """The first offset of the window (negative when it starts with inherited events)."""
        return min(self.event_offsets)

    @property
    def read_offset(self) -> Offset:
        """The offset from which the summarizer reads the session's own records."""
        return self.fork_offset if self.fork_offset is not None else self.start_offset

    @property
    def end_offset(self) -> Offset:
        """The last offset of the window."""
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
