"""A compaction request (and a projection snapshot) is validated whole when it is decoded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.codec import decode_compaction_request, decode_projection_snapshot, encode
from schemas.compaction_request import (
    MAX_ATTEMPTS,
    MAX_REQUEST_ID_LENGTH,
    MAX_SEED_PARTS,
    MAX_SEED_TEXT_CHARS,
    CompactionRequest,
    SummarySeed,
    compaction_request_id,
    seed_problem,
)
from schemas.errors import DecodeError
from schemas.event import Content, Part
from schemas.keys import Offset, SessionKey, TenantId

KEY = SessionKey("acme/app/u1/s1")


def _request_json(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": 1,
        "request_id": "r1",
        "tenant": "acme",
        "session_key": KEY,
        "trigger": "sliding_window",
        "event_offsets": [3, 4],
        "event_ids": ["e3", "e4"],
        "start_timestamp": 1.0,
        "end_timestamp": 2.0,
        "decided_at_offset": 5,
        "attempt": 1,
    }
    record.update(changes)
    return record


def _seed(parts: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    return {
        "timestamp": 0.5,
        "author": "user",
        "content": {"role": "model", "parts": parts},
        **changes,
    }


def _reason(record: dict[str, Any]) -> str:
    with pytest.raises(DecodeError) as caught:
        decode_compaction_request(orjson.dumps(record))
    return str(caught.value)


def test_a_request_the_projector_writes_decodes() -> None:
    offsets = (Offset(3), Offset(4))
    request_id = compaction_request_id(KEY, "sliding_window", offsets)
    request = decode_compaction_request(orjson.dumps(_request_json(request_id=request_id)))
    assert (request.request_id, request.event_offsets, request.attempt) == (request_id, offsets, 1)


@pytest.mark.parametrize(
    "changes",
    [
        {"request_id": "a" * MAX_REQUEST_ID_LENGTH},
        {"request_id": "r.1:a-b_C"},
        {"event_offsets": [0], "event_ids": ["e0"], "decided_at_offset": 0},
        {"event_offsets": [2**63 - 1], "event_ids": ["e"]},
        {"attempt": MAX_ATTEMPTS},
        {"start_timestamp": 1, "end_timestamp": 2},
        {"seed": _seed([{"text": "x" * MAX_SEED_TEXT_CHARS}])},
        {"seed": _seed([{"text": "x"}] * MAX_SEED_PARTS)},
    ],
    ids=[
        "longest-id",
        "id-punctuation",
        "zero",
        "int64-max",
        "last-attempt",
        "int-time",
        "seed",
        "seed-parts",
    ],
)
def test_a_request_at_each_bound_decodes(changes: dict[str, Any]) -> None:
    request = decode_compaction_request(orjson.dumps(_request_json(**changes)))
    assert decode_compaction_request(encode(request)) == request


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tenant": "evil"}, "tenant 'evil' does not own session 'acme/app/u1/s1'"),
        ({"request_id": "r" * 249}, "request_id: String should have at most 64 characters"),
        ({"request_id": "a" * 65}, "request_id: String should have at most 64 characters"),
        ({"request_id": "r\nFORGED"}, "request_id: String should match pattern"),
        ({"request_id": "acme/app"}, "request_id: String should match pattern"),
        ({"request_id": ""}, "request_id: String should have at least 1 character"),
        ({"event_offsets": [3, -1]}, "inherited must name each negative event offset once"),
        (
            {
                "event_offsets": [-2, 4],
                "inherited": [{"offset": -2, "session_key": "acme/a/u/s0", "origin_offset": 9}],
            },
            "fork_offset is set exactly when the window holds inherited events",
        ),
        (
            {
                "event_offsets": [-2, 4],
                "fork_offset": 1,
                "inherited": [{"offset": -2, "session_key": "globex/a/u/s0", "origin_offset": 9}],
            },
            "globex",
        ),
        (
            {
                "event_offsets": [-2, 4],
                "fork_offset": 1,
                "inherited": [{"offset": -3, "session_key": "acme/a/u/s0", "origin_offset": 9}],
            },
            "inherited must name each negative event offset once",
        ),
        ({"event_offsets": ["3", 4]}, "event_offsets.0: Input should be a valid integer"),
        ({"event_offsets": [3.0, 4]}, "event_offsets.0: Input should be a valid integer"),
        ({"event_offsets": [True, 4]}, "event_offsets.0: Input should be a valid integer"),
        ({"event_offsets": [3, 2**63]}, "integer outside the signed 64-bit range"),
        ({"decided_at_offset": -5}, "decided_at_offset: Input should be greater than or equal"),
        ({"attempt": 0}, "attempt: Input should be greater than or equal to 1"),
        ({"attempt": MAX_ATTEMPTS + 1}, "attempt: Input should be less than or equal to 1000"),
        ({"attempt": "2"}, "attempt: Input should be a valid integer"),
        ({"start_timestamp": "inf"}, "start_timestamp: Input should be a valid number"),
        ({"end_timestamp": "NaN"}, "end_timestamp: Input should be a valid number"),
        ({"end_timestamp": "-Infinity"}, "end_timestamp: Input should be a valid number"),
        ({"end_timestamp": "2.0"}, "end_timestamp: Input should be a valid number"),
        ({"seed": _seed([{"text": "x"}], timestamp="inf")}, "seed.timestamp: Input should be"),
        (
            {"seed": _seed([{"text": "x"}] * (MAX_SEED_PARTS + 1))},
            "seed content too large: 1001 parts, at most 1000",
        ),
        (
            {"seed": _seed([{"text": "x" * (MAX_SEED_TEXT_CHARS // 2)}, {"text": "yz"}] * 2)},
            "seed content too large: 200004 characters of text, at most 200000",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 40 else None,
)
def test_a_request_beyond_a_bound_is_refused_with_its_reason(
    changes: dict[str, Any], reason: str
) -> None:
    assert reason in _reason(_request_json(**changes))


def test_the_reviews_forged_request_is_refused_before_anything_reads_it() -> None:
    # Review H4: tenant "evil" naming acme's session decoded fine.
    raw = (
        b'{"request_id":"r1","tenant":"evil","session_key":"acme/app/u/s",'
        b'"trigger":"sliding_window","event_offsets":[3],"event_ids":["e3"],'
        b'"start_timestamp":1.0,"end_timestamp":1.0,"decided_at_offset":4}'
    )
    with pytest.raises(DecodeError, match="tenant 'evil' does not own session 'acme/app/u/s'"):
        decode_compaction_request(raw)


def test_a_request_built_in_code_is_held_to_the_same_bounds() -> None:
    with pytest.raises(ValueError, match="does not own session"):
        CompactionRequest(
            request_id="r1",
            tenant=TenantId("evil"),
            session_key=KEY,
            trigger="sliding_window",
            event_offsets=(Offset(1),),
            event_ids=("e1",),
            start_timestamp=1.0,
            end_timestamp=1.0,
            decided_at_offset=Offset(2),
        )


def test_seed_problem_counts_parts_and_the_text_of_all_parts() -> None:
    assert seed_problem(Content(parts=[Part(text="x" * MAX_SEED_TEXT_CHARS)])) is None
    assert seed_problem(Content(parts=None)) is None
    half = Part(text="x" * (MAX_SEED_TEXT_CHARS // 2 + 1))
    assert seed_problem(Content(parts=[half, half])) == (
        f"{MAX_SEED_TEXT_CHARS + 2} characters of text, at most {MAX_SEED_TEXT_CHARS}"
    )
    many = Content(parts=[Part()] * (MAX_SEED_PARTS + 1))
    assert seed_problem(many) == f"{MAX_SEED_PARTS + 1} parts, at most {MAX_SEED_PARTS}"


_offsets = st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=5)
_finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def requests(draw: st.DrawFn) -> CompactionRequest:
    offsets = tuple(Offset(offset) for offset in draw(_offsets))
    seed = draw(
        st.none()
        | st.builds(
            SummarySeed,
            timestamp=_finite,
            author=st.text(max_size=10),
            content=st.builds(Content, parts=st.lists(st.builds(Part, text=st.text()))),
        )
    )
    return CompactionRequest(
        request_id=draw(st.from_regex(r"[A-Za-z0-9._:-]{1,64}", fullmatch=True)),
        tenant=TenantId("acme"),
        session_key=KEY,
        trigger=draw(st.sampled_from(["sliding_window", "token_threshold"])),
        event_offsets=offsets,
        event_ids=tuple(f"e{offset}" for offset in offsets),
        start_timestamp=draw(_finite),
        end_timestamp=draw(_finite),
        seed=seed,
        decided_at_offset=Offset(draw(st.integers(0, 2**63 - 1))),
        attempt=draw(st.integers(1, MAX_ATTEMPTS)),
    )


@settings(max_examples=60, deadline=None)
@given(requests())
def test_decode_inverts_encode_for_any_valid_request(request: CompactionRequest) -> None:
    assert decode_compaction_request(encode(request)) == request


def _snapshot_json(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": 1,
        "tenant": "acme",
        "session_key": KEY,
        "last_offset": 12,
        "invocations_total": 3,
        "invocations_since_compaction": 1,
        "token_usage": {"total_prompt_tokens": 10, "total_candidates_tokens": 2},
        "context_items": 4,
        "context_fingerprint": "ab",
    }
    record.update(changes)
    return record


def test_a_snapshot_of_a_projection_that_applied_nothing_decodes() -> None:
    snapshot = decode_projection_snapshot(orjson.dumps(_snapshot_json(last_offset=-1)))
    assert snapshot.last_offset == -1


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tenant": "evil"}, "tenant 'evil' does not own session"),
        ({"last_offset": -2}, "last_offset: Input should be greater than or equal to -1"),
        ({"last_offset": "12"}, "last_offset: Input should be a valid integer"),
        ({"invocations_total": -1}, "invocations_total: Input should be greater than or equal"),
        ({"context_items": 4.0}, "context_items: Input should be a valid integer"),
        (
            {"token_usage": {"total_prompt_tokens": 2**63}},
            "integer outside the signed 64-bit range",
        ),
        (
            {"token_usage": {"last_prompt_tokens": 2**31}},
            "token_usage.last_prompt_tokens: Input should be less than or equal to 2147483647",
        ),
        (
            {
                "boundary": {
                    "summary_event_id": "s",
                    "summary_offset": 3,
                    "start_timestamp": "inf",
                    "end_timestamp": 1.0,
                }
            },
            "boundary.start_timestamp: Input should be a valid number",
        ),
    ],
    ids=["tenant", "offset", "offset-str", "count", "count-float", "int64", "int32", "inf"],
)
def test_a_snapshot_beyond_a_bound_is_refused(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_projection_snapshot(orjson.dumps(_snapshot_json(**changes)))
    assert reason in str(caught.value)
