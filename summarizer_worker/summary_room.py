"""How much summary text the answer to a request can carry. Pure: no I/O, no clock.

The summary event is the one record the worker writes whose size depends on
a reply. Everything else in it is known before the summarizer is called (the
session, the request id, the range, the fresh ids), so the worker builds the
envelope with an empty text first: that proves the answer can be valid at
all, and what the encoded envelope leaves under
:data:`MAX_SUMMARY_RECORD_BYTES` is the room for the text. A reply is then
clipped to the configured length and to that room, so the transaction that
writes it never fails on its size (review M6).

Example: an empty-text envelope of 1,400 bytes leaves 898,600 bytes; a
summary of 20,000 characters with a 16,000-character maximum is cut to
15,999 characters and ``…``.
"""

from __future__ import annotations

from typing import Final

import orjson

from schemas.codec import encode
from schemas.envelope import Envelope
from summarizer_worker.summary_text import clip

#: Kafka's default message limit (1,048,576 bytes) less headroom for the
#: record's framing and the batch: the most a summary record may take.
MAX_SUMMARY_RECORD_BYTES: Final = 900_000
#: Bytes one character can take in JSON: a control character as ``\u001f``.
MAX_JSON_BYTES_PER_CHAR: Final = 6
#: The least room a request's answer must leave for its text before the call:
#: a 500-character summary of the costliest characters plus the reply's token
#: usage. Less means no useful summary could be written, so nothing is called.
MIN_TEXT_ROOM_BYTES: Final = 500 * MAX_JSON_BYTES_PER_CHAR + 256
ELLIPSIS: Final = "…"


def json_text_bytes(text: str) -> int:
    """Bytes `text` takes inside a JSON string, quotes excluded, as the codec writes it."""
    return len(orjson.dumps(text)) - 2


def text_room_bytes(empty: Envelope) -> int:
    """Bytes the summary's text may take, given its envelope `empty` with an empty text.

    Negative when even the empty envelope is over the bound.
    """
    return MAX_SUMMARY_RECORD_BYTES - len(encode(empty))


def fit_summary_text(text: str, *, max_chars: int, room_bytes: int) -> str:
    """`text` cut to at most `max_chars` characters and `room_bytes` bytes of JSON.

    A cut is marked with ``…``. Empty when not even the mark fits.

    Example: ``fit_summary_text("abcdef", max_chars=4, room_bytes=100)`` ->
    ``"abc…"``; four double quotes with ``room_bytes=7`` -> two of them and
    ``…`` (each quote takes two bytes, the mark three).
    """
    kept = clip(text, max_chars)
    if json_text_bytes(kept) <= room_bytes:
        return kept
    room = room_bytes - json_text_bytes(ELLIPSIS)
    if room < 0:
        return ""
    used = 0
    for index, character in enumerate(kept):
        used += json_text_bytes(character)
        if used > room:
            return kept[:index].rstrip() + ELLIPSIS
    return kept  # unreachable: the whole text was over the room
