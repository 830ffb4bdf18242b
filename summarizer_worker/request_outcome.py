"""What handling one compaction request produced: the records to write, if any. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from schemas.codec import encode
from schemas.kafka.timing import Header

OutcomeKind = Literal["summarized", "dead_lettered", "refused", "withdrawn", "skipped"]


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One record to produce in the request's transaction.

    `headers`: timing stamps (:mod:`schemas.kafka.timing`), on a summary.
    """

    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[Header, ...] = ()

    @classmethod
    def encoded(cls, topic: str, key: bytes | None, record: BaseModel) -> OutputRecord:
        """`record`, encoded, for `topic` under `key`."""
        return cls(topic, key, encode(record))


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """How a request ended and what to write for it.

    Attributes:
        kind: ``summarized`` (a summary event for `events`),
            ``dead_lettered`` (a dead letter only: the request could not be
            read or could not name its session legitimately), ``refused`` (a
            dead letter and a refusal event in the request's session: a valid
            request given up for good), ``withdrawn`` (a refusal event alone:
            a rewind or another summary made the request stale, which is no
            fault of the request) or ``skipped`` (nothing: a summary or a
            refusal answered the request already).
        records: The records to produce, in order.
    """

    kind: OutcomeKind
    records: tuple[OutputRecord, ...] = ()


SKIPPED = RequestOutcome("skipped")
