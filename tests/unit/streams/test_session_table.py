"""The projector table's keys and value encodings round-trip."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schemas.keys import Offset, SessionKey
from streams.session_table import (
    MAX_CHUNK_BYTES,
    SessionHeader,
    StoredRecord,
    chunk_key,
    chunked,
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
    header = SessionHeader(Offset(123_456_789), 4_000, 1_000_000, 3_900, Offset(1_000_000))
    raw = encode_header(header)
    assert decode_header(raw) == header
    assert len(raw) < 110


def test_keys_of_one_session_are_distinct_and_request_keys_parse_back() -> None:
    keys = {header_key(KEY), chunk_key(KEY, 0), chunk_key(KEY, 1), request_key(KEY)}
    assert len(keys) == 4
    assert session_of_request_key(request_key(KEY)) == KEY
    assert session_of_request_key(header_key(KEY)) is None


def test_chunks_split_a_batch_so_that_each_fits_one_changelog_record() -> None:
    big = [StoredRecord(Offset(n), bytes([n]) * 600_000) for n in range(5)]
    small = [StoredRecord(Offset(10 + n), b"x" * 100) for n in range(3)]
    chunks = chunked([*big[:2], *small, *big[2:]])
    assert [r.offset for chunk in chunks for r in chunk] == [0, 1, 10, 11, 12, 2, 3, 4]
    assert all(len(encode_chunk(chunk)) <= MAX_CHUNK_BYTES for chunk in chunks)
    assert [len(chunk) for chunk in chunks] == [1, 4, 1, 1, 1]  # greedy, order kept
    assert [list(decode_chunk(encode_chunk(c))) for c in chunks] == chunks
    assert chunked(small) == [small]
    assert chunked([]) == []
