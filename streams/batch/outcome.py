"""What one batch causes: dead letters, requests, snapshots and table writes. No I/O.

The batch step (:class:`streams.batch.projector.BatchProjector`) fills a
:class:`BatchOutcome`; the engine moves its bytes. Snapshots are assembled on
demand (:meth:`BatchOutcome.snapshot_records`), after the engine has sent
the batch's requests.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from projections.contents.snapshot import snapshot_carrying
from projections.fold.projection import SessionProjection
from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.keys import Offset, SessionKey
from schemas.log_text import shown
from schemas.projection_snapshot import ProjectionSnapshot
from streams.batch.cache import CachedSession
from streams.batch.records import SourceRecord, dead_letter, failure_reason

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TableWrite:
    """One write of the ``sessions`` table; ``value`` None deletes the key."""

    partition: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Changed:
    """A session whose snapshot the batch publishes, its batch's last record, and its cache entry.

    The snapshot reads the entry's context digest and leaves the new one there.
    """

    projection: SessionProjection
    last_record: SourceRecord
    session: CachedSession

    def snapshot(self) -> ProjectionSnapshot:
        """The session's snapshot, from and then into its entry's context digest."""
        session = self.session
        snapshot, context = snapshot_carrying(self.projection, session.digest, session.pieces)
        session.digest, session.pieces = context.digest, context.pieces
        return snapshot


@dataclass(frozen=True, slots=True)
class HistoryNeed:
    """A session whose batch needs records its projection released: the shell reads them.

    Attributes:
        partition: The session's `events` partition.
        session_key: The session.
        first_offset: Offset of its first applied record.
        end_offset: One past its last applied record: the history is
            ``[first_offset, end_offset)`` of the partition, the session's key only.
        group: The session's records of the batch, folded once the history is read.
    """

    partition: int
    session_key: SessionKey
    first_offset: Offset
    end_offset: Offset
    group: list[SourceRecord]


@dataclass(slots=True)
class BatchOutcome:
    """What one batch causes.

    `history_needed` lists the sessions whose records were not folded yet
    because their projections released what those records need; the shell
    reads each one's history and hands it to
    :meth:`~streams.batch.projector.BatchProjector.project_history`, which
    folds them into this same outcome. `conflicting_summaries` lists the
    summaries ADK authored on pipeline-owned apps (session, offset), each
    logged once by the batch step and counted by the engine.
    """

    dead_letters: list[DeadLetter] = field(default_factory=list)
    requests: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    answered: list[SessionKey] = field(default_factory=list)
    learned: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    changed: list[Changed] = field(default_factory=list)
    writes: list[TableWrite] = field(default_factory=list)
    applied: int = 0
    redelivered: int = 0
    history_needed: list[HistoryNeed] = field(default_factory=list)
    conflicting_summaries: list[tuple[SessionKey, Offset]] = field(default_factory=list)
    letters_logged: int = 0  # how many of `dead_letters` the projector has logged

    def snapshots(self) -> list[ProjectionSnapshot]:
        """The snapshots to publish, one per session in `changed`. O(their visible contexts).

        Assembled on demand, so the shell can send the batch's requests before
        paying for the contexts.

        Raises:
            Exception: A snapshot cannot be assembled (the shell uses
                :meth:`snapshot_records`, which dead-letters instead).
        """
        return [changed.snapshot() for changed in self.changed]

    def snapshot_records(self) -> tuple[list[tuple[bytes, bytes | None]], list[DeadLetter]]:
        """The encoded snapshots (key, value) to publish, and dead letters for those that failed.

        A deleted session (nothing applied since its deletion) gets a
        tombstone, value None, so the compacted topic forgets it.
        A session whose snapshot cannot be assembled or encoded gets no
        snapshot; its batch's last record is dead-lettered at stage
        ``snapshot`` with the reason, and the other sessions' snapshots go out.
        """
        records: list[tuple[bytes, bytes | None]] = []
        letters: list[DeadLetter] = []
        for changed in self.changed:
            if changed.projection.deleted_at is not None:
                changed.session.digest = changed.session.pieces = None
                records.append((changed.projection.session_key.encode(), None))
                continue
            try:
                snapshot = changed.snapshot()
                records.append((snapshot.session_key.encode(), encode(snapshot)))
            except Exception as exc:  # noqa: BLE001 - one session's snapshot never stops the batch
                letter = dead_letter(changed.last_record, "snapshot", failure_reason(exc))
                logger.warning(  # at most one a session and batch, never one per record
                    "dead letter topic=%s partition=%d offset=%d stage=snapshot reason=%s",
                    shown(letter.source_topic),
                    letter.source_partition,
                    letter.source_offset,
                    shown(letter.reason),
                )
                letters.append(letter)
        return records, letters
