"""A session as the ``sessions`` table stores it: restored, checkpointed, written again.

The table layout is :mod:`streams.session_table`'s; this module reads and
writes it for the batch step through a :data:`TableReader` it is given (no
I/O of its own). :func:`rebuild_session` restores a session from its
checkpoint and chunks (or from its history on `events`),
:func:`release_checkpoint` decides a batch's checkpoint, and
:func:`chunks_again` lists the entries a redelivery writes again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from projections.compaction.config import CompactionConfig
from projections.fold.projection import (
    NO_OFFSET,
    SessionProjection,
    apply,
    note_request,
)
from projections.retention.log_retention import retained
from projections.retention.state_codec import decode_state, encode_state
from schemas.codec import decode_compaction_request, decode_envelope_sized
from schemas.dead_letter import DeadLetter
from schemas.keys import Offset, SessionKey
from schemas.log_text import shown
from schemas.logged_event import LoggedEvent
from streams.batch.cache import CachedSession
from streams.batch.inheritance import Inheritance
from streams.batch.outcome import TableWrite
from streams.batch.records import SourceRecord, decode_record
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    MAX_CHUNK_BYTES,
    SessionHeader,
    checkpoint_key,
    chunk_key,
    decode_chunk,
    decode_header,
    encode_header,
    header_key,
    request_key,
)

logger = logging.getLogger(__name__)

TableReader = Callable[[int, bytes], bytes | None]
"""Reads one key of the ``sessions`` table, given the session's partition."""

#: What a decoded checkpoint retains in memory, per byte of its encoding (records as
#: models, persistent maps of identifiers): the cache's estimate, as the codec's is
#: for a record (:func:`schemas.codec.decode_envelope_sized`).
CHECKPOINT_RETAINED_FACTOR: Final = 4


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A session's projection released by retention, and its encoding for the ``k:`` key."""

    projection: SessionProjection
    encoded: bytes


def stored_header(key: SessionKey, partition: int, read: TableReader) -> SessionHeader:
    """The session's stored header (an empty session's when none is stored)."""
    raw = read(partition, header_key(key))
    return SessionHeader(NO_OFFSET, 0, 0) if raw is None else decode_header(raw)


def header_value(session: CachedSession) -> bytes:
    """The encoded header of the cached `session`, as the table stores it."""
    return encode_header(
        SessionHeader(
            session.projection.last_offset,
            session.chunks,
            session.events,
            session.base,
            session.first_offset,
        )
    )


def release_checkpoint(
    key: SessionKey, projection: SessionProjection, config: CompactionConfig, *, force: bool
) -> Checkpoint | None:
    """The released projection and its bytes, when retention releases anything now (or `force`).

    A failure to release or encode keeps the whole projection (logged): the
    session folds on as before and tries again at its next batch. So does a
    checkpoint larger than one changelog record may be (:data:`MAX_CHUNK_BYTES`:
    a fork of a long session that no summary has compacted, say): the session
    keeps its chunks, and a fork restored without a checkpoint reads what it
    inherits again, which is slower but never a record the changelog refuses.
    """
    try:
        released = retained(projection, config)
        if released is projection and not force:
            return None
        encoded = encode_state(released)
    except Exception:
        logger.exception("session=%s: no checkpoint this batch", shown(key))
        return None
    if len(encoded) > MAX_CHUNK_BYTES:
        logger.info(
            "session=%s: no checkpoint this batch: it takes %d bytes, over %d",
            shown(key),
            len(encoded),
            MAX_CHUNK_BYTES,
        )
        return None
    return Checkpoint(released, encoded)


def chunks_again(
    key: SessionKey, session: CachedSession, first_redelivered: Offset, read: TableReader
) -> list[TableWrite]:
    """The session's stored entries holding a redelivered offset, to be written again.

    Walks back from the newest stored chunk (this batch's is not stored yet)
    to the one that holds `first_redelivered`; when the checkpoint covers
    it, the checkpoint is written again too (before the chunks after it).

    Raises:
        LookupError: A chunk or the checkpoint the header names is missing.
    """
    partition = session.partition
    rewrites: list[TableWrite] = []
    for number in range(session.chunks - 1, session.base - 1, -1):
        chunk = read(partition, chunk_key(key, number))
        if chunk is None:
            raise LookupError(f"session {shown(key)}: chunk {number} is missing")
        rewrites.append(TableWrite(partition, chunk_key(key, number), chunk))
        if next(decode_chunk(chunk)).offset <= first_redelivered:
            break
    else:
        if session.base:
            stored = read(partition, checkpoint_key(key))
            if stored is None:
                raise LookupError(f"session {shown(key)}: its checkpoint is missing")
            rewrites.append(TableWrite(partition, checkpoint_key(key), stored))
    rewrites.reverse()
    return rewrites


def _whole_fold(
    projection: SessionProjection, history: Sequence[SourceRecord], last_offset: Offset
) -> tuple[SessionProjection, int]:
    """`projection` with the records of `history` up to `last_offset` applied, and their bytes."""
    size = 0
    for source in history:
        if source.offset > last_offset:
            break
        decoded = decode_record(source)
        if isinstance(decoded, DeadLetter):
            continue
        try:
            projection = apply(projection, decoded.logged)
        except Exception:  # noqa: BLE001, S112 - refused when it came; refused again
            continue
        size += decoded.size
    return projection, size


def _table_fold(
    key: SessionKey,
    header: SessionHeader,
    partition: int,
    read: TableReader,
    start: tuple[SessionProjection, int],
) -> tuple[SessionProjection, int]:
    """The stored checkpoint (else `start`: a projection and its bytes), chunks since folded on.

    Raises:
        LookupError: A chunk or the checkpoint `header` names is missing.
        DecodeError: A stored record no longer decodes.
    """
    projection, size = start
    if header.base:
        raw_checkpoint = read(partition, checkpoint_key(key))
        if raw_checkpoint is None:
            raise LookupError(f"session {shown(key)}: its checkpoint is missing")
        projection = decode_state(raw_checkpoint)
        size = len(raw_checkpoint) * CHECKPOINT_RETAINED_FACTOR
    for number in range(header.base, header.chunks):
        chunk = read(partition, chunk_key(key, number))
        if chunk is None:
            raise LookupError(f"session {shown(key)}: chunk {number} of {header.chunks} is missing")
        for stored in decode_chunk(chunk):
            envelope, record_size = decode_envelope_sized(stored.envelope)
            projection = apply(projection, LoggedEvent(stored.offset, envelope))
            size += record_size
    return projection, size


def rebuild_session(
    settings: ProjectorSettings,
    key: SessionKey,
    partition: int,
    read: TableReader,
    *,
    history: Sequence[SourceRecord] | None = None,
    inherited: Inheritance | None = None,
) -> CachedSession:
    """A session's projection restored from the table, waiting on its stored request.

    From the checkpoint, if one is stored, with the chunks since folded on:
    O(what the session holds + records since the checkpoint). Chunks hold
    only records that decoded when they were applied, so they decode again
    (unless the codec grew stricter since: then this raises and the shell
    quarantines the session). With `history` (the session's records on
    `events` up to its last applied offset) the projection is the whole fold
    of those instead, and the table gives only the header and the request;
    records that no longer decode or apply are passed over, as they were when
    they came (dead-lettered then). With `inherited` (the session is a fork)
    the projection starts from what it inherits, folded by
    :func:`~streams.batch.inheritance.inherit`.

    Raises:
        NeedsHistory: A record since the checkpoint needs records the
            checkpoint released (a rewind behind it): rebuild from `history`.
        LookupError: A chunk or the checkpoint the header names is missing.
        DecodeError: A stored record or request no longer decodes.
        Exception: A stored value is not what the table layout says.
    """
    projection = settings.empty_projection_for(key)
    size = 0
    digest = None
    if inherited is not None:
        projection, size, digest = inherited.projection, inherited.size, inherited.digest
    raw_header = read(partition, header_key(key))
    if raw_header is None:
        config = settings.compaction_for(key)
        return CachedSession(projection, partition, 0, 0, None, config, size, digest=digest)
    header = decode_header(raw_header)
    if history is not None:
        projection, own_size = _whole_fold(projection, history, header.last_offset)
        size += own_size
    else:
        projection, size = _table_fold(key, header, partition, read, (projection, size))
    request = None
    raw_request = read(partition, request_key(key))
    if raw_request is not None:
        request = decode_compaction_request(raw_request)
        projection = note_request(projection, request)
    return CachedSession(
        projection,
        partition,
        header.chunks,
        header.events,
        request,
        settings.compaction_for(key),
        size,
        header.base,
        header.first_offset,
        digest,
    )
