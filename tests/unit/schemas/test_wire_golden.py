"""The wire formats, pinned byte for byte by checked-in golden files.

Each file in ``tests/unit/schemas/golden/`` holds one record exactly as it
crosses its topic (compact JSON, as :func:`schemas.codec.encode` writes it,
followed by one newline), and :data:`RECORDS` names the record each file must
be. A round trip cannot see a renamed, removed or retyped field (both sides
change together); these tests can: the bytes are fixed.

For every current record type and version (envelope v2, with the event shapes
the pipeline reads and writes; compaction request v1; projection snapshot v1;
dead letter v1), encoding the object written here gives exactly the golden
bytes, and decoding the golden bytes gives that object. The v1 envelope
(``tests/fixtures/envelope-v1.json``, the upcaster's input) decodes to the v2
envelope written here, and re-encodes as v2. Request ids of fixed inputs
equal literals computed outside the code (``printf '%s\\0%s\\0%s' KEY
TRIGGER OFFSETS | sha256sum | cut -c1-32``).

The tests never write the golden files. To change a format deliberately:

1. add the new schema version and its upcaster (:mod:`schemas.upcasters`);
   the files of released versions stay, as decode-only inputs of the upcaster;
2. edit the objects in :data:`RECORDS` (or add new entries for the new version);
3. run ``python -m tests.unit.schemas.regenerate_golden`` from the repository
   root, which writes every file of :data:`RECORDS` from its object;
4. read ``git diff tests/unit/schemas/golden`` and check that only the
   intended fields changed, then commit the files with the schema change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from pydantic import BaseModel

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions
from projections.compaction.summary_request import refusal_envelope
from projections.event_kinds import refused_request_id, summary_request_id
from schemas.codec import (
    decode_compaction_request,
    decode_dead_letter,
    decode_envelope,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest, SummarySeed, compaction_request_id
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.event import Content, Event, Part
from schemas.keys import Offset, SessionKey, TenantId
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import CompactionBoundary, ProjectionSnapshot, TokenUsage
from schemas.upcasters import CURRENT_VERSION

GOLDEN: Final = Path(__file__).parent / "golden"
V1_ENVELOPE: Final = Path(__file__).parents[2] / "fixtures" / "envelope-v1.json"

SESSION: Final = SessionKey("acme/support/u42/s7")
TENANT: Final = TenantId("acme")
#: ``compaction_request_id(SESSION, "sliding_window", (3, 4, 5, 6))``, computed with sha256sum.
SLIDING_ID: Final = "5aac3c1c9bb2f44df28ec061691f341a"
#: ``compaction_request_id(SESSION, "token_threshold", (9, 10, 11))``, computed with sha256sum.
THRESHOLD_ID: Final = "7734627645875ff89494bc85091f2bc0"


def _envelope(idempotency_key: str, event: dict[str, Any]) -> Envelope:
    return Envelope(
        tenant=TENANT,
        session_key=SESSION,
        producer_id="agent-runner-3",
        idempotency_key=idempotency_key,
        event=Event.model_validate(event),
    )


ADK_ACTIONS: Final[dict[str, Any]] = {
    "stateDelta": {},
    "artifactDelta": {},
    "requestedAuthConfigs": {},
    "requestedToolConfirmations": {},
}

#: The envelope the v1 fixture becomes (its tenant is its session key's first part).
V1_UPCAST: Final = _envelope(
    "acme/support/u42/s7#e1",
    {
        "id": "e1",
        "invocationId": "inv1",
        "author": "user",
        "nodeInfo": {"path": ""},
        "timestamp": 1764480000.25,
        "content": {"role": "user", "parts": [{"text": "Where is my parcel?"}]},
        "actions": {**ADK_ACTIONS, "stateDelta": {"counter": 1}},
    },
)

REFUSAL_REQUEST: Final = CompactionRequest(
    request_id=THRESHOLD_ID,
    tenant=TENANT,
    session_key=SESSION,
    trigger="token_threshold",
    event_offsets=(Offset(9), Offset(10), Offset(11)),
    event_ids=("e9", "e10", "e11"),
    start_timestamp=1764480040.0,
    end_timestamp=1764480050.5,
    decided_at_offset=Offset(12),
    attempt=3,
)

RECORDS: Final[dict[str, BaseModel]] = {
    "envelope-v2-text.json": _envelope(
        "acme/support/u42/s7#e1",
        {
            "id": "e1",
            "invocationId": "inv1",
            "author": "user",
            "timestamp": 1764480000.25,
            "content": {"role": "user", "parts": [{"text": "Où est mon colis ? 📦"}]},
        },
    ),
    "envelope-v2-from-v1.json": V1_UPCAST,
    "envelope-v2-function-call.json": _envelope(
        "acme/support/u42/s7#e2",
        {
            "id": "e2",
            "invocationId": "inv1",
            "author": "support_agent",
            "branch": "support_agent",
            "nodeInfo": {"path": ""},
            "timestamp": 1764480001.5,
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Let me look that up.", "thoughtSignature": "c2lnbmVk"},
                    {
                        "functionCall": {
                            "id": "call-1",
                            "name": "track_parcel",
                            "args": {"parcel_id": "P-1009", "verbose": True},
                        }
                    },
                ],
            },
            "usageMetadata": {
                "promptTokenCount": 812,
                "candidatesTokenCount": 35,
                "totalTokenCount": 847,
            },
            "longRunningToolIds": ["call-1"],
            "actions": ADK_ACTIONS,
            # A field context management never reads: kept and written back as it came.
            "groundingMetadata": {"webSearchQueries": ["parcel P-1009"]},
        },
    ),
    "envelope-v2-function-response.json": _envelope(
        "acme/support/u42/s7#e3",
        {
            "id": "e3",
            "invocationId": "inv1",
            "author": "support_agent",
            "timestamp": 1764480002.0,
            "content": {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call-1",
                            "name": "track_parcel",
                            "response": {"status": "in transit", "eta_days": 2},
                        }
                    }
                ],
            },
            "actions": {**ADK_ACTIONS, "skipSummarization": False},
        },
    ),
    "envelope-v2-summary.json": _envelope(
        f"summary:{SLIDING_ID}",
        {
            "id": "sum-1",
            "invocationId": "cmp-1",
            "author": "user",
            "timestamp": 1764480030.0,
            "actions": {
                "compaction": {
                    "startTimestamp": 1764480003.0,
                    "endTimestamp": 1764480020.5,
                    "compactedContent": {
                        "role": "model",
                        "parts": [{"text": "The user asked where parcel P-1009 is."}],
                    },
                }
            },
            "usageMetadata": {"promptTokenCount": 420, "candidatesTokenCount": 18},
            "customMetadata": {"ctxstream": {"compaction_request_id": SLIDING_ID}},
        },
    ),
    "envelope-v2-rewind.json": _envelope(
        "acme/support/u42/s7#e8",
        {
            "id": "e8",
            "invocationId": "inv4",
            "author": "user",
            "timestamp": 1764480035.0,
            "actions": {
                "rewindBeforeInvocationId": "inv2",
                "stateDelta": {"counter": 1, "step": None},
            },
        },
    ),
    "envelope-v2-state-delta.json": _envelope(
        "acme/support/u42/s7#e9",
        {
            "id": "e9",
            "invocationId": "inv5",
            "author": "support_agent",
            "timestamp": 1764480040.0,
            "actions": {
                "stateDelta": {
                    "counter": 2,
                    "app:region": "eu",
                    "user:tier": "gold",
                    "temp:scratch": [1, 2.5, "x"],
                },
                "artifactDelta": {"label.pdf": 0},
                "transferToAgent": "billing_agent",
                "transferReason": "a refund",
                "escalate": False,
                "endOfAgent": True,
            },
        },
    ),
    "envelope-v2-refusal.json": _envelope(
        f"refused:{THRESHOLD_ID}",
        {
            "id": "refusal-1",
            "author": "ctxstream",
            "timestamp": 1764480060.0,
            "customMetadata": {
                "ctxstream": {"compaction_refused": THRESHOLD_ID, "reason": "HTTP 400: too long"}
            },
        },
    ).model_copy(update={"producer_id": "summarizer-1"}),
    "compaction-request-v1-sliding.json": CompactionRequest(
        request_id=SLIDING_ID,
        tenant=TENANT,
        session_key=SESSION,
        trigger="sliding_window",
        event_offsets=(Offset(3), Offset(4), Offset(5), Offset(6)),
        event_ids=("e4", "e5", "e6", "e7"),
        start_timestamp=1764480003.0,
        end_timestamp=1764480020.5,
        decided_at_offset=Offset(7),
    ),
    "compaction-request-v1-token-seed.json": REFUSAL_REQUEST.model_copy(
        update={
            "seed": SummarySeed(
                timestamp=1764480030.0,
                author="user",
                branch="support_agent",
                content=Content(role="model", parts=[Part(text="The user asked where P-1009 is.")]),
            )
        }
    ),
    "projection-snapshot-v1.json": ProjectionSnapshot(
        tenant=TENANT,
        session_key=SESSION,
        last_offset=Offset(12),
        boundary=CompactionBoundary(
            summary_event_id="sum-1",
            summary_offset=Offset(8),
            start_timestamp=1764480003.0,
            end_timestamp=1764480020.5,
            request_id=SLIDING_ID,
        ),
        invocations_total=5,
        invocations_since_compaction=2,
        token_usage=TokenUsage(
            last_prompt_tokens=1210, total_prompt_tokens=4022, total_candidates_tokens=301
        ),
        context_items=6,
        context_fingerprint="0b6e8f7c3d2a19e5b4c7a6d58e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b",
        in_flight_request_id=THRESHOLD_ID,
    ),
    "projection-snapshot-v1-empty.json": ProjectionSnapshot(
        tenant=TENANT,
        session_key=SESSION,
        last_offset=Offset(-1),
        invocations_total=0,
        invocations_since_compaction=0,
        token_usage=TokenUsage(),
        context_items=0,
        context_fingerprint=hashlib.sha256(b"").hexdigest(),
    ),
    "dead-letter-v1.json": DeadLetter(
        reason="not JSON: unexpected character: line 1 column 2 (char 1)",
        stage="decode",
        source_topic="ctxstream.events",
        source_partition=3,
        source_offset=1042,
        original_key=SESSION.encode(),
        original_value=b"{not json\xff\x00",
        original_size=11,
    ),
    "dead-letter-v1-truncated.json": DeadLetter(
        reason="record on partition 1, but its key belongs to partition 0 of 2",
        stage="partition",
        source_topic="ctxstream.events",
        source_partition=1,
        source_offset=7,
        original_value=b"\x00\x01\x02\xfe\xff",
        original_size=600_000,
        truncated=True,
    ),
}

DECODERS: Final = {
    "envelope": decode_envelope,
    "compaction-request": decode_compaction_request,
    "projection-snapshot": decode_projection_snapshot,
    "dead-letter": decode_dead_letter,
}


def _golden(name: str) -> bytes:
    """The record bytes of one golden file (the file holds them and one newline)."""
    raw = (GOLDEN / name).read_bytes()
    assert raw.endswith(b"\n"), f"{name} must end with exactly one newline"
    return raw[:-1]


def _decode(name: str, raw: bytes) -> BaseModel:
    kind = name.split("-v", 1)[0]
    decoder: Any = DECODERS[kind]
    record: BaseModel = decoder(raw)
    return record


def test_every_golden_file_is_named_by_a_record_and_every_record_has_its_file() -> None:
    on_disk = {path.name for path in GOLDEN.iterdir() if path.suffix == ".json"}
    assert on_disk == set(RECORDS) | {"dead-letter-v1-before-stage.json"}


def test_every_current_record_kind_and_version_has_a_golden_file() -> None:
    kinds = {
        "envelope": "envelope",
        "compaction_request": "compaction-request",
        "projection_snapshot": "projection-snapshot",
        "dead_letter": "dead-letter",
    }
    for kind, version in CURRENT_VERSION.items():
        prefix = f"{kinds[kind]}-v{version}"
        assert any(name.startswith(prefix) for name in RECORDS), prefix


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_encoding_the_record_gives_exactly_the_golden_bytes(name: str) -> None:
    golden = _golden(name)
    encoded = encode(RECORDS[name])
    # The parsed comparison names the field that moved; the bytes pin order and spelling too.
    assert orjson.loads(encoded) == orjson.loads(golden)
    assert encoded == golden


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_decoding_the_golden_bytes_gives_the_record(name: str) -> None:
    decoded = _decode(name, _golden(name))
    assert decoded == RECORDS[name]
    assert type(decoded) is type(RECORDS[name])


def test_the_golden_envelopes_carry_what_the_pipeline_reads_from_them() -> None:
    """The fields behind the pipeline's own metadata, read from the files, not the objects."""
    summary = decode_envelope(_golden("envelope-v2-summary.json"), record_key=SESSION.encode())
    assert summary_request_id(summary.event) == SLIDING_ID
    compaction = summary.event.actions.compaction
    assert compaction is not None
    assert (compaction.start_timestamp, compaction.end_timestamp) == (1764480003.0, 1764480020.5)
    refusal = decode_envelope(_golden("envelope-v2-refusal.json"))
    assert refused_request_id(refusal.event) == THRESHOLD_ID
    rewind = decode_envelope(_golden("envelope-v2-rewind.json"))
    assert rewind.event.actions.rewind_before_invocation_id == "inv2"
    assert rewind.event.actions.state_delta == {"counter": 1, "step": None}
    call = decode_envelope(_golden("envelope-v2-function-call.json"))
    assert call.event.model_extra == {"groundingMetadata": {"webSearchQueries": ["parcel P-1009"]}}
    assert call.event.long_running_tool_ids == ("call-1",)


def test_the_refusal_the_summarizer_writes_is_the_golden_refusal() -> None:
    written = refusal_envelope(
        REFUSAL_REQUEST,
        "HTTP 400: too long",
        producer_id="summarizer-1",
        event_id="refusal-1",
        timestamp=1764480060.0,
    )
    assert encode(written) == _golden("envelope-v2-refusal.json")


def test_the_v1_fixture_decodes_to_the_v2_envelope_and_is_written_as_v2() -> None:
    raw = V1_ENVELOPE.read_bytes()
    assert orjson.loads(raw)["schema_version"] == 1
    decoded = decode_envelope(raw, record_key=SESSION.encode())
    assert decoded == V1_UPCAST
    assert encode(decoded) == _golden("envelope-v2-from-v1.json")


def test_a_dead_letter_written_before_stage_and_size_decodes_with_their_defaults() -> None:
    decoded = decode_dead_letter(_golden("dead-letter-v1-before-stage.json"))
    assert decoded == DeadLetter(
        reason="invalid envelope: event.timestamp: Field required",
        source_topic="ctxstream.events",
        source_partition=0,
        source_offset=17,
        original_key=b"acme/app/u/s",
        original_value=b'{"x":1}',
    )
    assert (decoded.stage, decoded.original_size, decoded.truncated) == ("decode", None, False)


@pytest.mark.parametrize(
    ("trigger", "offsets", "expected"),
    [
        ("sliding_window", (3, 4, 5, 6), SLIDING_ID),
        ("token_threshold", (9, 10, 11), THRESHOLD_ID),
        # The same offsets under the other trigger: another request.
        ("token_threshold", (3, 4, 5, 6), "f4f4565b58651c82e9813c947185bd8a"),
        # Another range of the same trigger.
        ("sliding_window", (0, 1, 2, 3), "e2b7510fbfeb1f59591b36ebaf572214"),
        # Offsets in the order handed (a seed's summary is not among them): not sorted.
        ("sliding_window", (6, 5, 4, 3), "15f7578393cffb24a542783c5429cef1"),
        ("sliding_window", (12_345_678_901,), "78baf4240d570a6777a78186059045bd"),
    ],
)
def test_request_ids_of_fixed_inputs_are_fixed(
    trigger: Any, offsets: tuple[int, ...], expected: str
) -> None:
    assert compaction_request_id(SESSION, trigger, tuple(Offset(o) for o in offsets)) == expected


def _logged(offset: int, event: dict[str, Any]) -> LoggedEvent:
    return LoggedEvent(Offset(offset), _envelope(f"k{offset}", event))


def _turn(offset: int, invocation: str, author: str, text: str, **fields: Any) -> LoggedEvent:
    return _logged(
        offset,
        {
            "id": f"e{offset}",
            "invocationId": invocation,
            "author": author,
            "timestamp": 1764480000.0 + offset,
            "content": {"role": "user" if author == "user" else "model", "parts": [{"text": text}]},
            **fields,
        },
    )


def test_a_sliding_window_decision_names_its_request_by_the_fixed_id() -> None:
    # Two invocations of two events each; the first event of the third completes the second.
    records = [
        _turn(0, "inv1", "user", "hello"),
        _turn(1, "inv1", "support_agent", "hi"),
        _turn(2, "inv2", "user", "where is P-1009?"),
        _turn(3, "inv2", "support_agent", "in transit"),
        _turn(4, "inv3", "user", "thanks"),
    ]
    config = CompactionConfig(compaction_interval=2, overlap_size=0)
    _, requests = replay_decisions(SESSION, records, config)
    assert [(r.request_id, r.trigger, r.event_offsets, r.decided_at_offset) for r in requests] == [
        ("e2b7510fbfeb1f59591b36ebaf572214", "sliding_window", (0, 1, 2, 3), 4)
    ]


def test_a_token_window_with_a_seed_is_named_by_its_events_alone() -> None:
    """The seed (the previous summary, offset 2) is carried, not named by the id."""
    summary = _logged(
        2,
        {
            "id": "sum-1",
            "invocationId": "cmp-1",
            "author": "user",
            "timestamp": 1764480001.5,
            "actions": {
                "compaction": {
                    "startTimestamp": 1764480000.0,
                    "endTimestamp": 1764480001.0,
                    "compactedContent": {"role": "model", "parts": [{"text": "earlier"}]},
                }
            },
        },
    )
    usage = {"usageMetadata": {"promptTokenCount": 5_000}}
    records = [
        _turn(0, "inv1", "user", "hello"),
        _turn(1, "inv1", "support_agent", "hi"),
        summary,
        _turn(3, "inv2", "user", "where is P-1009?"),
        _turn(4, "inv2", "support_agent", "in transit", **usage),
        _turn(5, "inv3", "user", "thanks"),
    ]
    config = CompactionConfig(token_threshold=1_000, event_retention_size=1)
    _, requests = replay_decisions(SESSION, records, config)
    assert len(requests) == 1
    request = requests[0]
    assert request.seed is not None
    assert request.seed.content == Content(role="model", parts=[Part(text="earlier")])
    # Decided when inv2 completes, on the events before: 3 and 4 after the summary, the
    # newest one retained raw.
    assert (
        request.request_id,
        request.trigger,
        request.event_offsets,
        request.decided_at_offset,
    ) == ("5d10980db4c58c988e750b755403bbde", "token_threshold", (3,), 5)
