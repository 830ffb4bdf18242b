"""The record of the `events` topic: an ADK event plus what the pipeline needs."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationInfo,
    field_serializer,
    model_validator,
)

from schemas.creation_mark import CREATION_EXPECTED_OFFSET, creation_problem, names_creation
from schemas.deletion_mark import deletion_problem, names_deletion
from schemas.event import Event, event_to_json
from schemas.json_bounds import INT64_MAX
from schemas.keys import (
    SessionKey,
    TenantId,
    check_tenant_owns_session,
    validate_session_key,
)
from schemas.memory_mark import memory_mark_problem, names_memory_mark
from schemas.one_pass import count_model

ValidSessionKey = Annotated[SessionKey, AfterValidator(validate_session_key)]
ExpectedOffset = Annotated[int, Strict(), Field(ge=-1, le=INT64_MAX)]
"""The offset of the session's last writer record a conditional record expects; ``-1``: none."""


class Envelope(BaseModel):
    """One session event as appended by an agent, with its routing and identity.

    The event is written back exactly as the producer gave it (ADK's camelCase,
    only the fields that were set), so a round trip through the topic is equal
    as a JSON value. `expected_offset`, when set, makes the record conditional:
    the fold applies it only if the session's last writer record is at that
    offset (``-1``: the session has none), and it is written only when set, so
    every unconditional record keeps its bytes (projections/README.md,
    "Conditional records").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[2] = 2
    tenant: TenantId = Field(min_length=1)
    session_key: ValidSessionKey
    producer_id: str = Field(min_length=1, max_length=256)
    idempotency_key: str = Field(min_length=1, max_length=256)
    event: Event
    expected_offset: ExpectedOffset | None = None

    @model_validator(mode="after")
    def _checked(self, info: ValidationInfo) -> Self:
        # One validator, so one call per record: ownership, the marks, the count.
        check_tenant_owns_session(self.tenant, self.session_key)
        self._well_formed_bookkeeping()
        count_model(self, info)
        return self

    def _well_formed_bookkeeping(self) -> None:
        if not self.event.custom_metadata:  # no mark: the common case, decided at once
            return
        for names, problem_of, kind in (
            (names_deletion, deletion_problem, "deletion"),
            (names_memory_mark, memory_mark_problem, "memory"),
            (names_creation, creation_problem, "creation"),
        ):
            problem = problem_of(self.event) if names(self.event) else None
            if problem is not None:
                raise ValueError(f"event: a malformed {kind} record: {problem}")
        if names_creation(self.event) and self.expected_offset != CREATION_EXPECTED_OFFSET:
            raise ValueError(
                "event: a malformed creation record: its expected_offset must be "
                f"{CREATION_EXPECTED_OFFSET}, got {self.expected_offset}"
            )

    @field_serializer("event")
    def _event_as_given(self, event: Event) -> dict[str, Any]:
        return event_to_json(event)
