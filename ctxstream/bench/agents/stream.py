"""The agents workload's records: its sessions' invocations interleaved by their schedule. Pure.

No I/O, no clock, no randomness. :class:`AgentsWorkload` yields ``(key,
value)`` records of the `events` topic in the order agents would append them
(one invocation burst at a time, the session whose next invocation is due
first; :mod:`ctxstream.bench.agents.plan`), each session cut at its length, so
exactly ``events`` records come out, and counts them as they go
(:class:`~ctxstream.bench.agents.census.WorkloadCensus`).
:func:`session_envelopes` gives one session's first invocations whole, for a
benchmark that appends them in rounds of its own.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson

from ctxstream.bench.agents.census import WorkloadCensus
from ctxstream.bench.agents.invocations import AgentEvent, session_invocations
from ctxstream.bench.agents.plan import SessionPlan, plan_sessions
from schemas.codec import decode_envelope
from schemas.envelope import Envelope

PRODUCER_ID: Final = "bench-agents"
#: The least step between two live-stamped events of a session (seconds).
STAMP_STEP_S: Final = 0.0001


class AgentsWorkload:
    """The agents workload of `events` events over `sessions` sessions.

    Example: ``AgentsWorkload(40_000, 400).records()`` yields 40,000 records of
    400 sessions of 6 tenants and 4 apps; ``census`` counts them.
    """

    def __init__(
        self,
        events: int,
        sessions: int,
        *,
        tenant_prefix: str = "tenant",
        seed: int = 0,
        concurrency: int | None = None,
    ) -> None:
        """Plan the sessions (cheap: nothing is generated until :meth:`records` runs).

        Raises:
            ValueError: `sessions` is not positive or above `events`.
        """
        self.seed = seed
        self.plans = plan_sessions(
            events, sessions, tenant_prefix=tenant_prefix, seed=seed, concurrency=concurrency
        )
        self.census = WorkloadCensus()

    @property
    def events(self) -> int:
        """Records :meth:`records` yields."""
        return sum(plan.events for plan in self.plans)

    def records(self, clock: Callable[[], float] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """The records, ``(session key, envelope JSON)``; restarts :attr:`census`.

        With `clock` each event is stamped when it is made, as an agent
        appending live stamps it (at least :data:`STAMP_STEP_S` after its
        session's previous event), instead of with the workload's own times.
        """
        self.census = WorkloadCensus()
        stamped: dict[int, float] = {}
        due = [(plan.start, plan.number) for plan in self.plans]
        heapq.heapify(due)
        sessions: dict[int, Iterator[list[AgentEvent]]] = {}
        left = {plan.number: plan.events for plan in self.plans}
        while due:
            at, number = heapq.heappop(due)
            plan = self.plans[number]
            invocations = sessions.get(number)
            if invocations is None:
                invocations = sessions[number] = session_invocations(
                    plan.app, seed=self.seed, session=plan.key
                )
            burst = next(invocations)[: left[number]]
            key = plan.key.encode()
            for event in burst:
                self.census.note(plan.key, event)
                row = envelope_json(plan.key, event)
                if clock is not None:
                    now = max(clock(), stamped.get(number, 0.0) + STAMP_STEP_S)
                    row["event"] = {**event.event, "timestamp": now}
                    stamped[number] = now
                yield key, orjson.dumps(row)
            left[number] -= len(burst)
            if left[number] > 0:
                heapq.heappush(due, (at + plan.pace, number))
            else:
                del sessions[number]
                stamped.pop(number, None)


def envelope_json(session_key: str, event: AgentEvent) -> dict[str, Any]:
    """The envelope of `event` in session `session_key`, as JSON."""
    return {
        "schema_version": 2,
        "tenant": session_key.split("/", 1)[0],
        "session_key": session_key,
        "producer_id": PRODUCER_ID,
        "idempotency_key": f"{session_key}#{event.event['id']}",
        "event": event.event,
    }


def session_envelopes(
    plan: SessionPlan, invocations: int, *, seed: int = 0, census: WorkloadCensus | None = None
) -> list[list[Envelope]]:
    """The first `invocations` invocations of `plan`'s session, whole (not cut at its length).

    Counted in `census` when one is given.
    """
    made = itertools.islice(session_invocations(plan.app, seed=seed, session=plan.key), invocations)
    rounds = []
    for invocation in made:
        envelopes = []
        for event in invocation:
            if census is not None:
                census.note(plan.key, event)
            envelopes.append(decode_envelope(orjson.dumps(envelope_json(plan.key, event))))
        rounds.append(envelopes)
    return rounds
