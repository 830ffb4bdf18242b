"""The fold step: one session's records of a batch folded with the core's step. No I/O.

:func:`fold_session` applies :func:`projections.compaction.decision.step` to
each record above the projection's ``last_offset`` (those below are
redelivered and skipped) and encodes each request decided. A record over
``session_max_bytes``, whose step raises or whose request cannot be encoded
is refused with its dead letter; the others fold on. Nothing is written yet:
the :class:`SessionFold` goes to the checkpoint and write steps
(:mod:`streams.batch.projector`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.compaction.decision import step
from projections.compaction.ownership import conflicting_summary
from projections.event_kinds import refused_request_id, summary_request_id
from projections.fold.projection import SessionProjection
from projections.retention.retained_vector import NeedsHistory
from schemas.codec import MAX_RECORD_BYTES, encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.event import Event
from schemas.keys import Offset, SessionKey
from schemas.log_text import shown
from streams.batch.cache import CachedSession
from streams.batch.records import DecodedRecord, SourceRecord, dead_letter, failure_reason
from streams.session_table import StoredRecord


class HistoryNeeded(Exception):
    """Raised out of one session's fold when its projection released what a record needs."""

    def __init__(self, first_offset: Offset, end_offset: Offset) -> None:
        super().__init__(f"history [{first_offset}, {end_offset}) needed")
        self.first_offset = first_offset
        self.end_offset = end_offset


@dataclass(slots=True)
class SessionFold:
    """What one session's records of a batch fold to, before anything is written.

    Attributes:
        projection: The projection after the records that folded.
        new: The records that folded, as a chunk stores them.
        letters: The dead letters of the records refused.
        requests: Every request decided, with its encoding.
        decided: The last request decided, if no summary answered it since.
        answered: Whether a summary answered the in-flight request (and none was decided since).
        closed: Whether a summary or refusal naming a request folded with nothing in
            flight after it (and none was decided since): the request key must be gone.
            A crash can leave the key's delete in the worker's store ahead of the
            header, and not in the changelog; the answer then folds again on a
            session that waits on nothing, so only this says to delete it again.
        first_redelivered: The first redelivered offset, if any.
        redelivered: How many records were redelivered.
        added: The bytes the folded records retain.
        deleted: Whether a deletion record folded (the session's stored
            state is replaced by a checkpoint of what survives it).
        conflicts: Offsets of the summaries ADK authored that folded on a
            pipeline-owned app (:mod:`projections.compaction.ownership`).
    """

    projection: SessionProjection
    new: list[StoredRecord] = field(default_factory=list)
    letters: list[DeadLetter] = field(default_factory=list)
    requests: list[tuple[CompactionRequest, bytes]] = field(default_factory=list)
    decided: tuple[CompactionRequest, bytes] | None = None
    answered: bool = False
    closed: bool = False
    first_redelivered: Offset | None = None
    redelivered: int = 0
    added: int = 0
    deleted: bool = False
    conflicts: list[Offset] = field(default_factory=list)


def fold_session(
    key: SessionKey, session: CachedSession, decoded: list[DecodedRecord], limit: int
) -> SessionFold:
    """`decoded` (one session's records, in order) folded on `session`'s projection.

    Args:
        key: The session.
        session: Its cache entry, left as it is.
        decoded: Its records of the batch.
        limit: ``session_max_bytes``.

    Raises:
        HistoryNeeded: A record needs records the projection released.
    """
    fold = SessionFold(session.projection)
    for item in decoded:
        _fold_record(key, session, item, limit, fold)
    return fold


def _fold_record(
    key: SessionKey, session: CachedSession, item: DecodedRecord, limit: int, fold: SessionFold
) -> None:
    """`fold` moved on by one record: skipped, refused with its letter, or folded."""
    record, source = item.logged, item.source
    if record.offset <= fold.projection.last_offset:
        fold.redelivered += 1
        if fold.first_redelivered is None:
            fold.first_redelivered = record.offset
        return
    if session.size + fold.added + item.size > limit:
        reason = (
            f"session {shown(key)} would hold about {session.size + fold.added + item.size} "
            f"bytes in memory with this record, over session_max_bytes={limit}"
        )
        fold.letters.append(dead_letter(source, "session-size", reason))
        return
    waiting = fold.projection.in_flight is not None
    try:
        folded = step(fold.projection, record, session.config)
    except NeedsHistory as exc:
        first, end = session.first_offset, Offset(session.projection.last_offset + 1)
        raise HistoryNeeded(first, end) from exc
    except Exception as exc:  # noqa: BLE001 - one record's fold never stops its session
        fold.letters.append(dead_letter(source, "fold", failure_reason(exc)))
        return
    encoded: bytes | None = None
    if folded.request is not None:
        encoded = _encoded_request(folded.request, source, fold)
        if encoded is None:
            return
    stored = folded.projection.log.records is not fold.projection.log.records
    if stored and conflicting_summary(record.envelope.event, session.config):
        fold.conflicts.append(record.offset)
    fold.projection = folded.projection
    fold.deleted = fold.deleted or fold.projection.deleted_at == record.offset
    fold.new.append(StoredRecord(record.offset, source.value))
    fold.added += item.size
    if waiting and fold.projection.in_flight is None:
        fold.answered, fold.decided = True, None
    elif fold.projection.in_flight is None and _names_request(record.envelope.event):
        fold.closed, fold.decided = True, None
    if folded.request is not None and encoded is not None:
        fold.decided = (folded.request, encoded)
        fold.requests.append(fold.decided)


def _names_request(event: Event) -> bool:
    """Whether `event` is a summary or a refusal naming a compaction request."""
    return summary_request_id(event) is not None or refused_request_id(event) is not None


def _encoded_request(
    request: CompactionRequest, source: SourceRecord, fold: SessionFold
) -> bytes | None:
    """`request`'s encoding, or None with the letter of `source`, which decided it, in `fold`."""
    try:
        encoded = encode(request)
        if len(encoded) > MAX_RECORD_BYTES:
            raise ValueError(  # noqa: TRY301 - the same refusal as a failed encode
                f"the compaction request it decides takes {len(encoded)} bytes, "
                f"over the record limit of {MAX_RECORD_BYTES}"
            )
    except Exception as exc:  # noqa: BLE001 - an unencodable request refuses its record
        fold.letters.append(dead_letter(source, "encode", failure_reason(exc)))
        return None
    return encoded
