"""The compaction benchmark's workload and figures. Pure: no I/O, no clock.

The workload is sessions of ADK-shaped invocations (a question, a tool call
and its response, an answer), written one *round* at a time: one invocation
of every session, as concurrent agents would. The figures are computed from
three sets of observations: when each event's append began, which event
decided each request, and when each request's summary was first seen
applied in a published snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ctxstream.bench.report import percentile
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId

FIRST_TIMESTAMP: Final = 1_764_000_000.0


def bench_key(number: int, tenant: str = "bench") -> SessionKey:
    """The key of benchmark session `number`."""
    return SessionKey(f"{tenant}/app/u{number}/s{number}")


def invocation_envelopes(key: SessionKey, invocation: int) -> list[Envelope]:
    """Invocation `invocation` of session `key`: four events, one second apart."""
    inv = f"inv{invocation}"
    call_id = f"call{invocation}"
    rows: list[dict[str, Any]] = [
        {"author": "user", "content": {"role": "user", "parts": [{"text": f"ask {invocation}"}]}},
        {
            "author": "agent",
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"id": call_id, "name": "search", "args": {"q": 1}}}],
            },
        },
        {
            "author": "agent",
            "content": {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": call_id, "name": "search", "response": {"r": 2}}}
                ],
            },
        },
        {
            "author": "agent",
            "content": {"role": "model", "parts": [{"text": f"answer {invocation}"}]},
            "usageMetadata": {"promptTokenCount": 500, "candidatesTokenCount": 20},
        },
    ]
    tenant = TenantId(key.split("/", 1)[0])
    envelopes = []
    for position, row in enumerate(rows):
        event = Event.model_validate(
            {
                **row,
                "id": f"{inv}-e{position}",
                "invocationId": inv,
                "timestamp": FIRST_TIMESTAMP + invocation * 10 + position,
            }
        )
        envelopes.append(
            Envelope(
                tenant=tenant,
                session_key=key,
                producer_id="bench",
                idempotency_key=f"{key}#{event.id}",
                event=event,
            )
        )
    return envelopes


def workload_rounds(
    keys: Sequence[SessionKey], invocations: int, *, stagger: int = 1
) -> list[list[Envelope]]:
    """The rounds of the workload: one invocation of each session that is running.

    Session number i starts ``i % stagger`` rounds late, so that sessions
    reach their compaction triggers in different rounds rather than all at
    once (agents do not run in lockstep).

    Example: 2 sessions, 2 invocations, stagger 2 -> round 0: inv0 of s0;
    round 1: inv1 of s0, inv0 of s1; round 2: inv1 of s1.
    """
    rounds: list[list[Envelope]] = [[] for _ in range(invocations + stagger - 1)]
    for number, key in enumerate(keys):
        delay = number % stagger
        for invocation in range(invocations):
            rounds[delay + invocation].extend(invocation_envelopes(key, invocation))
    return rounds


@dataclass(frozen=True, slots=True)
class CompactionFigures:
    """What the benchmark reports.

    Attributes:
        p50_ms: Median latency, trigger append to summary applied.
        p99_ms: 99th percentile of the same.
        summaries_per_s: Summaries applied per second, from the first
            trigger's append to the last summary applied.
        duplicates: Committed summaries beyond the first for any request.
        missing: Requests without a committed summary when the run ended.
        requests: Requests measured.
    """

    p50_ms: float
    p99_ms: float
    summaries_per_s: float
    duplicates: int
    missing: int
    requests: int


def compaction_figures(
    triggered_at: Mapping[str, float],
    applied_at: Mapping[str, float],
    committed_summaries: Mapping[str, int],
) -> CompactionFigures:
    """The figures of one run.

    Args:
        triggered_at: Request id -> when the append of the event that decided
            it began (seconds, the run's monotonic clock).
        applied_at: Request id -> when a snapshot first showed its summary
            applied.
        committed_summaries: Request id -> committed summary events naming it.

    Raises:
        ValueError: No request was both triggered and applied.
    """
    measured = [rid for rid in triggered_at if rid in applied_at]
    if not measured:
        raise ValueError("no request was decided and applied")
    latencies_ms = [(applied_at[rid] - triggered_at[rid]) * 1000.0 for rid in measured]
    first = min(triggered_at[rid] for rid in measured)
    last = max(applied_at[rid] for rid in measured)
    return CompactionFigures(
        p50_ms=round(percentile(latencies_ms, 0.50), 3),
        p99_ms=round(percentile(latencies_ms, 0.99), 3),
        summaries_per_s=round(len(measured) / (last - first), 3) if last > first else 0.0,
        duplicates=sum(max(0, committed_summaries.get(rid, 0) - 1) for rid in triggered_at),
        missing=sum(1 for rid in triggered_at if committed_summaries.get(rid, 0) == 0),
        requests=len(triggered_at),
    )
