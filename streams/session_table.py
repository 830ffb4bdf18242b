"""The layout of the projector's ``sessions`` table: keys and value encodings. Pure.

A session is spread over several keys so that what one event writes stays
proportional to that event: ``h:<session_key>`` its header, ``c:<session_key>:<n>``
its records one batch at a time, ``k:<session_key>`` its checkpoint,
``r:<session_key>`` its in-flight request; ``p:<partition>`` is the next `events`
offset the projector expects there. Example: a session folded in three batches, with
no checkpoint yet, holds ``h:<key>`` (``chunks=3``, ``base=0``) and ``c:<key>:0`` to
``c:<key>:2``.

The table of keys, their values and when each is written, and why a header never
names a missing chunk: ``streams/README.md``, "The sessions table".
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import orjson

from projections.fold.projection import NO_OFFSET
from schemas.keys import Offset, SessionKey

_RECORD_HEAD: Final = struct.Struct(">qI")  # offset, length of the envelope bytes


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """What the table knows about a session without reading its chunks.

    Attributes:
        last_offset: Offset of the last applied record (``-1``: none).
        chunks: How many chunks were written (numbers ``0 .. chunks-1``).
        events: How many records the chunks held.
        base: The first chunk the checkpoint does not cover (0: no checkpoint;
            the chunks below it are deleted).
        first_offset: Offset of the session's first applied record (``-1``:
            none): where a read of its history on `events` starts.
    """

    last_offset: Offset
    chunks: int
    events: int
    base: int = 0
    first_offset: Offset = NO_OFFSET


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One `events` record as a chunk keeps it: its offset and its original bytes."""

    offset: Offset
    envelope: bytes


def header_key(session_key: SessionKey) -> bytes:
    """``h:<session_key>``."""
    return b"h:" + session_key.encode()


def chunk_key(session_key: SessionKey, number: int) -> bytes:
    """``c:<session_key>:<number>``."""
    return b"c:" + session_key.encode() + b":" + str(number).encode()


def checkpoint_key(session_key: SessionKey) -> bytes:
    """``k:<session_key>``."""
    return b"k:" + session_key.encode()


def request_key(session_key: SessionKey) -> bytes:
    """``r:<session_key>``."""
    return b"r:" + session_key.encode()


def position_key(partition: int) -> bytes:
    """``p:<partition>``."""
    return b"p:" + str(partition).encode()


def session_of_request_key(key: bytes) -> SessionKey | None:
    """The session of an ``r:`` key, None for any other key."""
    return SessionKey(key[2:].decode()) if key.startswith(b"r:") else None


def encode_header(header: SessionHeader) -> bytes:
    """The header as compact JSON."""
    return orjson.dumps(
        {
            "last_offset": header.last_offset,
            "chunks": header.chunks,
            "events": header.events,
            "base": header.base,
            "first_offset": header.first_offset,
        }
    )


def decode_header(raw: bytes) -> SessionHeader:
    """The header written by :func:`encode_header`."""
    data = orjson.loads(raw)
    return SessionHeader(
        Offset(data["last_offset"]),
        data["chunks"],
        data["events"],
        data.get("base", 0),
        Offset(data.get("first_offset", -1)),
    )


#: Bytes of one chunk value: what a changelog record may carry (Kafka's default
#: ``max.message.bytes`` and aiokafka's ``max_request_size`` are 1 MiB) less
#: headroom for the key and the record's framing. One record of the largest
#: size the codec accepts always fits alone.
MAX_CHUNK_BYTES: Final = 1_040_000


def chunked(records: list[StoredRecord]) -> list[list[StoredRecord]]:
    """`records` in order, split so that every :func:`encode_chunk` fits :data:`MAX_CHUNK_BYTES`.

    A batch's records of one session are one chunk unless they are too large
    together; a single record larger than the bound still gets a chunk of its
    own (the codec refuses records that large before they get here).
    """
    chunks: list[list[StoredRecord]] = []
    size = 0
    for record in records:
        framed = _RECORD_HEAD.size + len(record.envelope)
        if chunks and size + framed <= MAX_CHUNK_BYTES:
            chunks[-1].append(record)
            size += framed
        else:
            chunks.append([record])
            size = framed
    return chunks


def encode_chunk(records: list[StoredRecord]) -> bytes:
    """The records framed one after another."""
    parts: list[bytes] = []
    for record in records:
        parts.append(_RECORD_HEAD.pack(record.offset, len(record.envelope)))
        parts.append(record.envelope)
    return b"".join(parts)


def decode_chunk(raw: bytes) -> Iterator[StoredRecord]:
    """The records of a chunk written by :func:`encode_chunk`, in order."""
    view = memoryview(raw)
    position = 0
    while position < len(raw):
        offset, length = _RECORD_HEAD.unpack_from(view, position)
        position += _RECORD_HEAD.size
        yield StoredRecord(Offset(offset), bytes(view[position : position + length]))
        position += length
