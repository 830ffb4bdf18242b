"""The checkpoint and write steps of one session's batch, after its fold. No I/O.

:func:`checkpoint_step` asks retention for a checkpoint (:mod:`streams.batch.stored`);
:func:`write_fold` then moves the session's cache entry and the batch's
:class:`~streams.batch.outcome.BatchOutcome` forward with the
:class:`~streams.batch.fold.SessionFold`. It never raises, so a session moves
forward wholly or not at all. Table writes per session, in order: entries a
redelivery writes again, the new chunks or the checkpoint, the request key
when set, the header, the deletions (the request key's, then the chunks the
checkpoint covers) (:mod:`streams.session_table`).
"""

from __future__ import annotations

from projections.fold.projection import NO_OFFSET
from schemas.codec import encode
from schemas.keys import SessionKey
from streams.batch.cache import CachedSession, SessionCache
from streams.batch.fold import SessionFold
from streams.batch.outcome import BatchOutcome, Changed, TableWrite
from streams.batch.records import SourceRecord
from streams.batch.stored import Checkpoint, header_value, release_checkpoint
from streams.session_table import (
    checkpoint_key,
    chunk_key,
    chunked,
    encode_chunk,
    header_key,
    request_key,
)


def checkpoint_step(
    key: SessionKey, session: CachedSession, fold: SessionFold, was_fork: bool
) -> Checkpoint | None:
    """The checkpoint of a batch that folded records, if retention released any now."""
    if not fold.new:
        return None
    # A batch that made the session a fork checkpoints it, so that a restore does not
    # read the source's history again; one that deleted it, so that the deleted
    # records' chunks go (a checkpoint deletes the chunks it covers).
    forked = not was_fork and fold.projection.forked_at is not None
    force = forked or fold.deleted
    return release_checkpoint(key, fold.projection, session.config, force=force)


def write_fold(
    cache: SessionCache,
    key: SessionKey,
    session: CachedSession,
    fold: SessionFold,
    rewrites: list[TableWrite],
    checkpoint: Checkpoint | None,
    outcome: BatchOutcome,
    last_record: SourceRecord,
) -> None:
    """The write step: `fold` moves `session` and `outcome` forward. Never raises.

    Writes, in order: the entries a redelivery writes again, the new chunks
    or the checkpoint, the request key when decided or held, the header, and
    last the deletions: the request key's, then the chunks the checkpoint covers.
    A crash that stores a prefix never keeps a request key's deletion without
    the header that folded its answer.
    """
    partition = session.partition
    outcome.dead_letters.extend(fold.letters)
    outcome.redelivered += fold.redelivered
    outcome.applied += len(fold.new)
    outcome.requests.extend((request, partition) for request, _ in fold.requests)
    outcome.writes.extend(rewrites)
    outcome.conflicting_summaries.extend((key, offset) for offset in fold.conflicts)
    covered = _write_records(cache, key, session, fold, checkpoint, outcome)
    deletions = _write_request(key, session, fold, outcome) + covered
    if fold.new or fold.first_redelivered is not None:
        outcome.writes.append(TableWrite(partition, header_key(key), header_value(session)))
        outcome.changed.append(Changed(session.projection, last_record, session))
    outcome.writes.extend(deletions)


def _write_records(
    cache: SessionCache,
    key: SessionKey,
    session: CachedSession,
    fold: SessionFold,
    checkpoint: Checkpoint | None,
    outcome: BatchOutcome,
) -> list[TableWrite]:
    """The folded records' chunks (or `checkpoint`); the deletions of the chunks it covers."""
    if not fold.new:
        return []
    projection = fold.projection
    if checkpoint is None:
        for records in chunked(fold.new):  # each fits one changelog record
            value = encode_chunk(records)
            outcome.writes.append(
                TableWrite(session.partition, chunk_key(key, session.chunks), value)
            )
            session.chunks += 1
    else:
        projection = checkpoint.projection
    session.events += len(fold.new)
    if session.first_offset == NO_OFFSET:
        session.first_offset = fold.new[0].offset
    session.projection = projection
    cache.grew(session, fold.added)
    if checkpoint is None:
        return []
    return _write_checkpoint(cache, key, session, fold, checkpoint, outcome)


def _write_checkpoint(
    cache: SessionCache,
    key: SessionKey,
    session: CachedSession,
    fold: SessionFold,
    checkpoint: Checkpoint,
    outcome: BatchOutcome,
) -> list[TableWrite]:
    """Write `checkpoint`; the deletions of the chunks it covers, written last."""
    partition = session.partition
    # The checkpoint covers this batch's records too: they get no chunk of their own,
    # only the chunk number they would have had, so that the base is above 0.
    outcome.writes.append(TableWrite(partition, checkpoint_key(key), checkpoint.encoded))
    deletions = [
        TableWrite(partition, chunk_key(key, number), None)
        for number in range(session.base, session.chunks)
    ]
    session.chunks += 1
    session.base = session.chunks
    # The records it let go, in proportion: the cache's estimate shrinks with the log.
    kept = len(checkpoint.projection.log.records.tail)
    held = max(len(fold.projection.log.records.tail), 1)
    cache.grew(session, session.size * kept // held - session.size)
    return deletions


def _write_request(
    key: SessionKey, session: CachedSession, fold: SessionFold, outcome: BatchOutcome
) -> list[TableWrite]:
    """The request key: set when decided, deleted when answered, written again on redelivery.

    Written again too when the record that decided the held request folds
    again: a crash kept the key in the worker's store without its header, and
    not in the changelog; the rebuild learned it from the store. Its deletion
    is written again too, on a redelivery with none held, or when a summary or
    refusal folds with nothing in flight (``fold.closed``). The deletion is
    returned, to be written after the header: a crash that keeps it keeps the
    header, and one that does not leaves a key the rebuild finds answered.
    """
    partition = session.partition
    if fold.decided is not None:
        session.request = fold.decided[0]
        outcome.writes.append(TableWrite(partition, request_key(key), fold.decided[1]))
    elif fold.answered:
        session.request = None
        outcome.answered.append(key)
        return [TableWrite(partition, request_key(key), None)]
    elif session.request is not None and (
        fold.first_redelivered is not None
        or (fold.new and session.request.decided_at_offset >= fold.new[0].offset)
    ):  # redelivered, or the record that decided it folds again (learned from a torn store)
        outcome.writes.append(TableWrite(partition, request_key(key), encode(session.request)))
    elif fold.first_redelivered is not None or fold.closed:
        session.request = None
        return [TableWrite(partition, request_key(key), None)]
    return []
