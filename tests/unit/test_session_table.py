"""The projector table's keys and value encodings round-trip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schemas.keys import Offset, SessionKey
from streams.session_table import (
    SessionHeader,
    StoredRecord,
    chunk_key,
    decode_chunk,
    decode_header,
    encode_chunk,
    encode_header,
    header_key,
    request_key,
    session_of_request_key,
)

KEY = SessionKey("acme/support/u1/s1")


@given(st.lists(st.tuples(st.integers(0, 2**62), st.binary(max_size=300)), max_size=20))
def test_chunks_round_trip(rows: list[tuple[int, bytes]]) -> None:
    records = [StoredRecord(Offset(offset), data) for offset, data in rows]
    assert list(decode_chunk(encode_chunk(records))) == records


def test_header_round_trips_and_stays_small() -> None:
    header = SessionHeader(Offset(123_456_789), 4_000, 1_000_000)
    raw = encode_header(header)
    assert decode_header(raw) == header
    assert len(raw) < 80


def test_keys_of_one_session_are_distinct_and_request_keys_parse_back() -> None:
    keys = {header_key(KEY), chunk_key(KEY, 0), chunk_key(KEY, 1), request_key(KEY)}
    assert len(keys) == 4
    assert session_of_request_key(request_key(KEY)) == KEY
    assert session_of_request_key(header_key(KEY)) is None
