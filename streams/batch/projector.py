"""The batch step: a batch of `events` records folded into the sessions it touches. No I/O.

:meth:`BatchProjector.project` routes each record to its session (or dead-letters
it), and per session, in the batch's order: takes the projection from the cache
or rebuilds it (:mod:`streams.batch.stored`), folds (:mod:`streams.batch.fold`),
checkpoints when retention released records, and writes (chunks or checkpoint,
request key, header, deletions) into one :class:`~streams.batch.outcome.BatchOutcome`.
A session whose stored entries cannot be read back is quarantined while the
worker owns its partition. The design: ``streams/README.md``, "The batch step".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace

from projections.fold.projection import NO_OFFSET, SessionProjection
from projections.retention.retained_vector import NeedsHistory
from schemas.dead_letter import DeadLetter
from schemas.keys import Offset
from schemas.letter_log import LetterLog
from schemas.log_text import shown
from streams.batch.cache import CachedSession, SessionCache, SessionId
from streams.batch.fold import HistoryNeeded, fold_session
from streams.batch.inheritance import Inheritance
from streams.batch.outcome import BatchOutcome, HistoryNeed, TableWrite
from streams.batch.records import (
    DecodedRecord,
    HomePartitions,
    SourceRecord,
    dead_letter,
    decode_record,
    failure_reason,
)
from streams.batch.stored import TableReader, chunks_again, rebuild_session, stored_header
from streams.batch.write import checkpoint_step, write_fold
from streams.projector_settings import ProjectorSettings
from streams.session_table import request_key

logger = logging.getLogger(__name__)


def replace_waiting(projection: SessionProjection, waiting: SessionProjection) -> SessionProjection:
    """`projection` waiting on `waiting`'s in-flight request, nothing else moved."""
    return replace(projection, in_flight=waiting.in_flight)


class BatchProjector:
    """Folds batches of `events` records into cached session projections."""

    def __init__(
        self, settings: ProjectorSettings, cache: SessionCache, *, partitions: int
    ) -> None:
        """A projector folding into `cache`.

        Args:
            settings: The worker's settings.
            cache: The session cache.
            partitions: The `events` topic's partition count, as the broker
                reports it: a record on another partition than its key's is
                dead-lettered.
        """
        self._settings = settings
        self._cache = cache
        self._partitions = partitions
        self._quarantined: dict[SessionId, str] = {}
        self._letters = LetterLog(logger)

    @property
    def partitions(self) -> int:
        """The `events` topic's partition count."""
        return self._partitions

    @property
    def quarantined(self) -> dict[SessionId, str]:
        """Sessions whose stored entries could not be read back, with the reason."""
        return dict(self._quarantined)

    def is_quarantined(self, session_id: SessionId) -> bool:
        """Whether the session is quarantined (its records refused)."""
        return session_id in self._quarantined

    def revoked(self, partitions: set[int]) -> None:
        """Forget the cached and quarantined sessions of partitions no longer owned."""
        self._cache.revoked(partitions)
        for key in [k for k in self._quarantined if k[0] in partitions]:
            del self._quarantined[key]

    def project(self, records: Sequence[SourceRecord], read: TableReader) -> BatchOutcome:
        """Everything `records` cause, in order; the cache moves forward. Never raises."""
        self._letters.sweep()  # counts of letters that stopped coming are logged all the same
        outcome = BatchOutcome()
        groups: dict[tuple[int, bytes], list[SourceRecord]] = {}
        home = HomePartitions(self._partitions)
        for record in records:
            if record.key is None:
                outcome.dead_letters.append(
                    dead_letter(record, "decode", "record has no key (the session key)")
                )
                continue
            if (misplaced := home.misplaced(record)) is not None:
                outcome.dead_letters.append(misplaced)
                continue
            groups.setdefault((record.partition, record.key), []).append(record)
        for (partition, _), group in groups.items():
            self._project_group(partition, group, read, outcome)
        self._log_letters(outcome)
        return outcome

    def _log_letters(self, outcome: BatchOutcome) -> None:
        """Log `outcome`'s dead letters not logged yet: each session and stage's first.

        The rest are counted (a session past its size cap letters every append:
        one line each would let one tenant fill the log). Every letter still
        goes to `dead-letters`, and to the metrics.
        """
        for letter in outcome.dead_letters[outcome.letters_logged :]:
            self._letters.letter(letter)
        outcome.letters_logged = len(outcome.dead_letters)

    def _project_group(
        self,
        partition: int,
        group: list[SourceRecord],
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> None:
        """Decode and fold one session's records of the batch (one key, one partition).

        A session whose projection released what a record needs is listed in
        ``outcome.history_needed`` and left as it was. With `history` (its
        records on `events` up to the batch) the projection is first rebuilt
        from it, which releases nothing, so that cannot happen again; if it
        did, the session is quarantined.
        """
        decoded: list[DecodedRecord] = []
        for record in group:
            result = decode_record(record)
            if isinstance(result, DeadLetter):
                outcome.dead_letters.append(result)
            else:
                decoded.append(result)
        if not decoded:
            return
        key = decoded[0].logged.envelope.session_key
        session_id: SessionId = (partition, key)
        reason = self._quarantined.get(session_id)
        if reason is None:
            try:
                self._project_session(session_id, decoded, read, outcome, history, inherited)
            except HistoryNeeded as needed:
                if history is None:
                    sources = [item.source for item in decoded]
                    need = HistoryNeed(
                        partition, key, needed.first_offset, needed.end_offset, sources
                    )
                    outcome.history_needed.append(need)
                    return
                reason = f"session {shown(key)} quarantined: its history did not restore it"
                self._quarantine(session_id, reason)
            except Exception as exc:  # noqa: BLE001 - a bad stored value quarantines one session
                self._quarantine(
                    session_id, f"session {shown(key)} quarantined: {failure_reason(exc)}"
                )
            else:
                self._cache.evict(keep=session_id)
                return
            reason = self._quarantined[session_id]
        outcome.dead_letters.extend(dead_letter(r.source, "rebuild", reason) for r in decoded)

    def _quarantine(self, session_id: SessionId, reason: str) -> None:
        self._quarantined[session_id] = reason
        self._cache.drop(session_id)
        logger.error("%s", reason)

    def _session(
        self,
        session_id: SessionId,
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> CachedSession:
        """The session from the cache, else rebuilt from the table (or from `history`).

        Raises:
            HistoryNeeded: The table's checkpoint and chunks do not restore it.
        """
        cached = self._cache.get(session_id)
        if cached is None or history is not None:
            partition, key = session_id
            started = time.perf_counter()
            try:
                rebuilt = rebuild_session(
                    self._settings, key, partition, read, history=history, inherited=inherited
                )
            except NeedsHistory as exc:
                header = stored_header(key, partition, read)
                raise HistoryNeeded(header.first_offset, Offset(header.last_offset + 1)) from exc
            if cached is None and rebuilt.request is not None:
                if rebuilt.projection.in_flight is None:  # answered, key left behind
                    outcome.writes.append(TableWrite(partition, request_key(key), None))
                    rebuilt.request = None
                else:
                    outcome.learned.append((rebuilt.request, partition))
            elif cached is not None:
                rebuilt.request = cached.request
                rebuilt.projection = replace_waiting(rebuilt.projection, cached.projection)
            cached = rebuilt
            if cached.events:
                logger.debug(
                    "rebuilt session=%s events=%d bytes=%d seconds=%.4f from=%s",
                    shown(key),
                    cached.events,
                    cached.size,
                    time.perf_counter() - started,
                    "table" if history is None else "history",
                )
            self._cache.put(session_id, cached)
        return cached

    def _project_session(
        self,
        session_id: SessionId,
        decoded: list[DecodedRecord],
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> None:
        """Fold one session's records; what it writes reaches `outcome` only if it all succeeds.

        The fold step (:func:`fold_session`), the checkpoint step, then the
        write step (:mod:`streams.batch.write`), which never raises.

        Raises:
            Exception: The session's stored entries cannot be read back
                (quarantine); a record's own failure is dead-lettered instead.
        """
        key = session_id[1]
        session = self._session(session_id, read, outcome, history, inherited)
        was_fork = session.projection.forked_at is not None
        fold = fold_session(key, session, decoded, self._settings.session_max_bytes)
        rewrites: list[TableWrite] = []
        if fold.first_redelivered is not None:
            rewrites = chunks_again(key, session, fold.first_redelivered, read)
        checkpoint = checkpoint_step(key, session, fold, was_fork)
        # Nothing below raises: the session moves forward only now.
        write_fold(
            self._cache, key, session, fold, rewrites, checkpoint, outcome, decoded[-1].source
        )
        for offset in fold.conflicts:
            logger.warning(
                "session=%s offset=%d: a compaction event ADK authored on an app the pipeline "
                "compacts (owner 'pipeline'): folded; set the app's owner to 'adk' in "
                "CTXSTREAM_COMPACTION_OVERRIDES, or drop the App's events_compaction_config",
                shown(key),
                offset,
            )

    def project_history(
        self,
        need: HistoryNeed,
        history: Sequence[SourceRecord],
        read: TableReader,
        outcome: BatchOutcome,
        inherited: Inheritance | None = None,
    ) -> None:
        """Fold `need`'s records of the batch on its projection rebuilt from `history`.

        `history` is the session's records of ``[first_offset, end_offset)``
        as `events` holds them (the shell reads them). The rebuilt projection
        releases nothing, so the batch's records fold as on a session that
        never released anything, into this same `outcome`; the batch's
        retention then releases again. A history that does not start at the
        session's first record (the log's retention deleted it) quarantines
        the session and dead-letters its records. Never raises.

        With `inherited` (the session is a fork: what it inherits, which the
        shell read from its source's partition and folded with :func:`inherit`)
        the rebuild starts from it;
        a new session's `history` is empty (``need.first_offset`` is -1) and
        its fork record is in the batch.
        """
        session_id: SessionId = (need.partition, need.session_key)
        new_session = need.first_offset == NO_OFFSET
        if not new_session and (not history or history[0].offset != need.first_offset):
            first = history[0].offset if history else need.end_offset
            topic = need.group[0].topic if need.group else "events"
            self._quarantine(
                session_id,
                f"session {shown(need.session_key)} quarantined: its records before offset "
                f"{first} are no longer on {topic}, and its projection released them "
                f"(from offset {need.first_offset})",
            )
        self._project_group(need.partition, need.group, read, outcome, history, inherited)
        self._log_letters(outcome)

    def refuse_history(self, need: HistoryNeed, reason: str, outcome: BatchOutcome) -> None:
        """Quarantine `need`'s session, whose history cannot be read (`reason`), and its records.

        What a fork's line too long to follow (or a cycle of forks), or a
        history not read within ``history_read_timeout_s``, comes to: that
        session alone stops, saying why; the batch goes on.
        """
        session_id: SessionId = (need.partition, need.session_key)
        message = f"session {shown(need.session_key)} quarantined: {reason}"
        self._quarantine(session_id, message)
        letters = [dead_letter(source, "rebuild", message) for source in need.group]
        outcome.dead_letters.extend(letters)
        self._log_letters(outcome)
