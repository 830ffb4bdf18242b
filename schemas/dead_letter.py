"""The record of the `dead-letters` topic: a bad record, why, and where it came from."""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator


class DeadLetter(BaseModel):
    """A record the pipeline could not use, kept whole so nothing is lost.

    The original key and value are bytes in code and base64 text on the wire,
    so a fixed consumer can re-publish them byte for byte.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    reason: str = Field(min_length=1)
    source_topic: str
    source_partition: int = Field(ge=0)
    source_offset: int = Field(ge=0)
    original_key: bytes | None = None
    original_value: bytes
    stage: str = Field(default="decode", description="which step rejected the record")

    @field_validator("original_key", "original_value", mode="before")
    @classmethod
    def _from_base64(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True)
            except binascii.Error as exc:
                raise ValueError(f"not base64: {exc}") from exc
        return value

    @field_serializer("original_key", "original_value")
    def _to_base64(self, value: bytes | None) -> str | None:
        return None if value is None else base64.b64encode(value).decode()
