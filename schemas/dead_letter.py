"""The record of the `dead-letters` topic, and the one builder both workers use.

A dead letter says why a record was refused, at which stage, and where the
record is (topic, partition, offset). It keeps the original key and value
whole when they fit; otherwise it keeps a prefix and says so
(``original_size``, ``truncated``): the whole record stays at its source
offset, which the letter names. :func:`build_dead_letter` guarantees that the
encoded letter fits :data:`MAX_DEAD_LETTER_BYTES`, well below the topic's
message limit, whatever the record and the reason were.
"""

from __future__ import annotations

import base64
import binascii
from typing import Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from schemas.log_text import shown
from schemas.numbers import Count

#: Kafka's default ``max.message.bytes`` (1 MiB plus framing), which is also
#: aiokafka's default ``max_request_size``.
TOPIC_MESSAGE_LIMIT_BYTES: Final = 1_048_576
#: What an encoded dead letter may take: the limit less headroom for the
#: record's framing, headers and the producer's batch overhead.
MAX_DEAD_LETTER_BYTES: Final = 900_000
#: Characters of the reason kept (escaped for one log line); the rest is cut.
MAX_REASON_CHARS: Final = 2_000
#: Bytes of the original key kept.
MAX_KEY_BYTES: Final = 1_024


class DeadLetter(BaseModel):
    """A record the pipeline could not use, kept whole when it fits, so nothing is lost.

    The original key and value are bytes in code and base64 text on the wire,
    so a fixed consumer can re-publish them byte for byte (when ``truncated``
    is false; otherwise from `events` at the source offset).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    reason: str = Field(min_length=1)
    source_topic: str
    source_partition: Count
    source_offset: Count
    original_key: bytes | None = None
    original_value: bytes
    stage: str = Field(default="decode", description="which step rejected the record")
    original_size: Count | None = Field(
        default=None, description="bytes of the original value (None: letters before it)"
    )
    truncated: bool = Field(
        default=False, description="the reason, key or value was cut to fit the topic"
    )

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

    def record_key(self) -> bytes:
        """The letter's key on `dead-letters`: ``<topic>:<partition>:<offset>`` of its source."""
        return f"{self.source_topic}:{self.source_partition}:{self.source_offset}".encode()


def _encoded_size(letter: DeadLetter) -> int:
    # What schemas.codec.encode writes (the codec imports this module).
    return len(orjson.dumps(letter.model_dump(mode="json", by_alias=True, exclude_none=True)))


def build_dead_letter(
    *,
    reason: str,
    stage: str,
    source_topic: str,
    source_partition: int,
    source_offset: int,
    key: bytes | None,
    value: bytes,
) -> DeadLetter:
    """The dead letter of one record, guaranteed to fit :data:`MAX_DEAD_LETTER_BYTES` encoded.

    The reason is escaped to one line and cut to :data:`MAX_REASON_CHARS`;
    the key is cut to :data:`MAX_KEY_BYTES`; the value is kept whole when the
    letter then fits, else cut to the longest prefix that fits. ``truncated``
    says whether anything was cut; ``original_size`` is the value's length.

    Example: a 600 KB record refused at ``decode`` -> a letter of at most
    900,000 bytes with ``original_size=600000``, ``truncated=True`` and the
    first ~670 KB of the value.
    """
    safe_reason = shown(reason, MAX_REASON_CHARS) or "no reason given"
    kept_key = key if key is None or len(key) <= MAX_KEY_BYTES else key[:MAX_KEY_BYTES]
    truncated = safe_reason != reason or kept_key is not key
    letter = DeadLetter(
        reason=safe_reason,
        stage=shown(stage, 64) or "unknown",
        source_topic=shown(source_topic, 255),
        source_partition=max(0, source_partition),
        source_offset=max(0, source_offset),
        original_key=kept_key,
        original_value=b"",
        original_size=len(value),
        truncated=truncated,
    )
    # base64 turns every 3 bytes into 4 characters, which JSON writes as they are.
    room = MAX_DEAD_LETTER_BYTES - _encoded_size(letter) - len('"truncated":true,') - 4
    fits = max(0, room) // 4 * 3
    if len(value) <= fits:
        return letter.model_copy(update={"original_value": value})
    return letter.model_copy(update={"original_value": value[:fits], "truncated": True})
