"""The compaction benchmark's workload and figures. Pure: no I/O, no clock.

The measured workload is sessions of the agents workload
(:mod:`ctxstream.bench.agents`: several tenants and apps, each app compacting
by its own config; :func:`agents_sessions`), written one *round* at a time:
one invocation of every session, as concurrent agents would
(:func:`staggered_rounds`), each event stamped when it is appended
(:func:`restamped`), as an agent's clock stamps it, so the summaries the
summarizer stamps with its clock fall between them in order. The warm-up (and
the demo) use :func:`workload_rounds`: four-event invocations. The figures
are computed from three sets of observations: when each event's append
began, which event decided each request, and when each request's summary was
first seen applied in a published snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ctxstream.bench.agents.census import WorkloadCensus
from ctxstream.bench.agents.plan import plan_sessions
from ctxstream.bench.agents.stream import session_envelopes
from ctxstream.bench.report import percentile
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId

FIRST_TIMESTAMP: Final = 1_764_000_000.0
#: Between two events of one append (seconds): exact in a float near today's epoch.
STAMP_STEP_S: Final = 0.0001


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
    """The rounds of sessions `keys` of :func:`invocation_envelopes`: :func:`staggered_rounds`.

    Example: 2 sessions, 2 invocations, stagger 2 -> round 0: inv0 of s0;
    round 1: inv1 of s0, inv0 of s1; round 2: inv1 of s1.
    """
    sessions = [[invocation_envelopes(key, n) for n in range(invocations)] for key in keys]
    return staggered_rounds(sessions, stagger=stagger)


def staggered_rounds(
    sessions: Sequence[Sequence[Sequence[Envelope]]], *, stagger: int = 1
) -> list[list[Envelope]]:
    """The rounds of the workload: one invocation of each session that is running.

    `sessions` holds each session's invocations in order. Session number i
    starts ``i % stagger`` rounds late, so that sessions reach their compaction
    triggers in different rounds rather than all at once (agents do not run in
    lockstep).
    """
    longest = max((len(invocations) for invocations in sessions), default=0)
    rounds: list[list[Envelope]] = [[] for _ in range(longest + stagger - 1)]
    for number, invocations in enumerate(sessions):
        delay = number % stagger
        for index, invocation in enumerate(invocations):
            rounds[delay + index].extend(invocation)
    return rounds


def agents_sessions(
    sessions: int, invocations: int, *, tenant_prefix: str, census: WorkloadCensus
) -> list[list[list[Envelope]]]:
    """`sessions` sessions of the agents workload, `invocations` invocations each, counted.

    Their tenants and apps are the workload's (:func:`~ctxstream.bench.agents.plan.plan_sessions`).
    """
    plans = plan_sessions(sessions, sessions, tenant_prefix=tenant_prefix)
    return [session_envelopes(plan, invocations, census=census) for plan in plans]


def restamped(envelopes: Sequence[Envelope], now: float) -> list[Envelope]:
    """`envelopes` with their events stamped `now`, :data:`STAMP_STEP_S` apart, in order.

    Example: three events restamped at 100.0 -> 100.0, 100.0001, 100.0002.
    """
    return [
        envelope.model_copy(
            update={
                "event": envelope.event.model_copy(
                    update={"timestamp": now + position * STAMP_STEP_S}
                )
            }
        )
        for position, envelope in enumerate(envelopes)
    ]


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
