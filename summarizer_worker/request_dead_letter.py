"""The `dead-letters` record of a compaction request the worker gives up on. Pure."""

from __future__ import annotations

from typing import Literal

from schemas.dead_letter import DeadLetter

#: ``decode``: the record is not a compaction request; ``summarize``: a valid
#: request failed for good (range not found, summarizer error after retries).
RequestStage = Literal["decode", "summarize"]


def request_dead_letter(
    *,
    reason: str,
    stage: RequestStage,
    topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes,
) -> DeadLetter:
    """The dead letter of the request record at `topic`/`partition`/`offset`.

    The original bytes are kept whole, so the projector can read the request
    back (its id and session) and decide that session again, and a fixed
    request can be re-published byte for byte.
    """
    return DeadLetter(
        reason=reason,
        stage=stage,
        source_topic=topic,
        source_partition=partition,
        source_offset=offset,
        original_key=key,
        original_value=value,
    )
