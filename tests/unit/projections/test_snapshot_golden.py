"""The snapshot a fixed session projects to, every field written out by hand.

:func:`projections.contents.snapshot.to_snapshot` maps a projection onto the record
subscribers read; the record's bytes are pinned by
``tests/unit/schemas/golden/projection-snapshot-v1*.json``. Here the mapping
is: a hand-written session (a tool call and its answer, later turns, a summary
naming its request, usage reported along the way) and a request in flight
project to a :class:`ProjectionSnapshot` whose fields are literals: the
boundary from the summary, the invocation counts, the token totals, the
context's item count and fingerprint (of the canonical contents JSON written
below, by ``tests.support.fingerprints``), and the in-flight request. A field
mapped from the wrong source, or left at its default, fails here.
"""

from __future__ import annotations

from typing import Any, Final

from projections.contents.contents_request import ContentsRequest
from projections.contents.snapshot import to_snapshot
from projections.fold.projection import SessionProjection, empty_projection, note_request, project
from schemas.codec import decode_projection_snapshot, encode
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey, TenantId
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import CompactionBoundary, ProjectionSnapshot, TokenUsage
from tests.support.fingerprints import fingerprint_of_text

SESSION: Final = SessionKey("acme/support/u42/s7")
#: The view of the replying agent: its own calls and their answers stay as they are (with
#: no agent name, a response to a named agent's call is quoted, as in ADK).
VIEW: Final = ContentsRequest(agent_name="agent")


def _logged(offset: int, event: dict[str, Any]) -> LoggedEvent:
    envelope = Envelope(
        tenant=TenantId("acme"),
        session_key=SESSION,
        producer_id="runner",
        idempotency_key=f"k{offset}",
        event=Event.model_validate({"id": f"e{offset}", **event}),
    )
    return LoggedEvent(Offset(offset), envelope)


def _said(offset: int, invocation: str, author: str, text: str, **fields: Any) -> LoggedEvent:
    role = "user" if author == "user" else "model"
    return _logged(
        offset,
        {
            "invocationId": invocation,
            "author": author,
            "timestamp": 100.0 + offset,
            "content": {"role": role, "parts": [{"text": text}]},
            **fields,
        },
    )


def _usage(prompt: int, candidates: int) -> dict[str, Any]:
    return {"usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": candidates}}


RECORDS: Final = [
    _said(0, "inv1", "user", "where is P-1?"),
    _logged(
        1,
        {
            "invocationId": "inv1",
            "author": "agent",
            "timestamp": 101.0,
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"id": "c1", "name": "lookup", "args": {"q": "P-1"}}}],
            },
            **_usage(100, 10),
        },
    ),
    _logged(
        2,
        {
            "invocationId": "inv1",
            "author": "agent",
            "timestamp": 102.0,
            "content": {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "lookup", "response": {"s": 1}}}
                ],
            },
        },
    ),
    _said(3, "inv1", "agent", "in transit", **_usage(150, 20)),
    _said(4, "inv2", "user", "thanks"),
    _said(5, "inv2", "agent", "welcome", **_usage(180, 5)),
    # The summary of inv1 (timestamps 100 to 103), naming the request it answers.
    _logged(
        6,
        {
            "invocationId": "cmp-1",
            "author": "user",
            "timestamp": 105.5,
            "actions": {
                "compaction": {
                    "startTimestamp": 100.0,
                    "endTimestamp": 103.0,
                    "compactedContent": {"role": "model", "parts": [{"text": "P-1 in transit"}]},
                }
            },
            "customMetadata": {"ctxstream": {"compaction_request_id": "r-1"}},
        },
    ),
    _said(7, "inv3", "user", "more?"),
    _said(8, "inv3", "agent", "no", **_usage(210, 7)),
]

IN_FLIGHT: Final = CompactionRequest(
    request_id="r-2",
    tenant=TenantId("acme"),
    session_key=SESSION,
    trigger="sliding_window",
    event_offsets=(Offset(4), Offset(5)),
    event_ids=("e4", "e5"),
    start_timestamp=104.0,
    end_timestamp=105.0,
    decided_at_offset=Offset(8),
)

#: The context: the summary where inv1 was, then inv2 and inv3 as they were said.
CANONICAL_CONTENTS: Final = (
    '[{"parts":[{"text":"P-1 in transit"}],"role":"model"},'
    '{"parts":[{"text":"thanks"}],"role":"user"},'
    '{"parts":[{"text":"welcome"}],"role":"model"},'
    '{"parts":[{"text":"more?"}],"role":"user"},'
    '{"parts":[{"text":"no"}],"role":"model"}]'
)

EXPECTED: Final = ProjectionSnapshot(
    tenant=TenantId("acme"),
    session_key=SESSION,
    last_offset=Offset(8),
    boundary=CompactionBoundary(
        summary_event_id="e6",
        summary_offset=Offset(6),
        start_timestamp=100.0,
        end_timestamp=103.0,
        request_id="r-1",
    ),
    invocations_total=3,  # inv1, inv2, inv3; a summary is no invocation
    invocations_since_compaction=2,  # inv2 and inv3 end after 103.0
    token_usage=TokenUsage(
        last_prompt_tokens=210,  # the newest count since the summary
        total_prompt_tokens=100 + 150 + 180 + 210,
        total_candidates_tokens=10 + 20 + 5 + 7,
    ),
    context_items=5,
    context_fingerprint=fingerprint_of_text(CANONICAL_CONTENTS),
    in_flight_request_id="r-2",
)


def _projected(records: list[LoggedEvent]) -> SessionProjection:
    return project(SESSION, records, start=empty_projection(SESSION, VIEW))


def test_a_fixed_session_projects_to_the_snapshot_written_out() -> None:
    snapshot = to_snapshot(note_request(_projected(RECORDS), IN_FLIGHT))
    assert snapshot == EXPECTED
    assert decode_projection_snapshot(encode(snapshot)) == EXPECTED


def test_before_the_summary_there_is_no_boundary_and_the_calls_are_in_the_context() -> None:
    snapshot = to_snapshot(_projected(RECORDS[:6]))
    canonical = (
        '[{"parts":[{"text":"where is P-1?"}],"role":"user"},'
        '{"parts":[{"functionCall":{"args":{"q":"P-1"},"id":"c1","name":"lookup"}}],"role":"model"},'
        '{"parts":[{"functionResponse":{"id":"c1","name":"lookup","response":{"s":1}}}],'
        '"role":"user"},'
        '{"parts":[{"text":"in transit"}],"role":"model"},'
        '{"parts":[{"text":"thanks"}],"role":"user"},'
        '{"parts":[{"text":"welcome"}],"role":"model"}]'
    )
    assert snapshot == ProjectionSnapshot(
        tenant=TenantId("acme"),
        session_key=SESSION,
        last_offset=Offset(5),
        invocations_total=2,
        invocations_since_compaction=2,
        token_usage=TokenUsage(
            last_prompt_tokens=180, total_prompt_tokens=430, total_candidates_tokens=35
        ),
        context_items=6,
        context_fingerprint=fingerprint_of_text(canonical),
    )
