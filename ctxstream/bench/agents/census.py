"""What an agents workload contained, counted as its records are made. Pure: no I/O, no clock.

Each benchmark that runs the workload reports these counts (the ``workload``
object of its JSON, ``workload_*`` lines of its text), beside what the run
made of them: the requests the projector decided and the summaries it folded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ctxstream.bench.agents.invocations import EVENT_KINDS, AgentEvent

SCOPES: Final = ("session", "user", "app")
#: The figures holding counts by part, and the word their lines end with.
_BY_PART: Final = {"events_by_kind": "events", "state_deltas_by_scope": "state_deltas"}


@dataclass(slots=True)
class WorkloadCensus:
    """Counts of the records made so far.

    Attributes:
        kinds: Events by kind (:data:`~ctxstream.bench.agents.invocations.EVENT_KINDS`).
        state_deltas: Events writing state, by scope (an event may count in several).
        tool_calls: Function calls (a parallel round's event makes two).
        session_events: Events per session key.
        tenants: The tenants seen.
        apps: The apps seen.
    """

    kinds: Counter[str] = field(default_factory=Counter)
    state_deltas: Counter[str] = field(default_factory=Counter)
    tool_calls: int = 0
    session_events: Counter[str] = field(default_factory=Counter)
    tenants: set[str] = field(default_factory=set)
    apps: set[str] = field(default_factory=set)

    def note(self, session_key: str, event: AgentEvent) -> None:
        """Count one more record: `event` of the session `session_key`."""
        self.kinds[event.kind] += 1
        self.state_deltas.update(event.state_scopes)
        self.tool_calls += event.calls
        if session_key not in self.session_events:
            tenant, app, _ = session_key.split("/", 2)
            self.tenants.add(tenant)
            self.apps.add(app)
        self.session_events[session_key] += 1

    def add(self, other: WorkloadCensus) -> None:
        """Count `other`'s records too (a benchmark that runs two workloads)."""
        self.kinds.update(other.kinds)
        self.state_deltas.update(other.state_deltas)
        self.tool_calls += other.tool_calls
        self.session_events.update(other.session_events)
        self.tenants |= other.tenants
        self.apps |= other.apps

    def figures(self) -> dict[str, Any]:
        """The counts as the benchmarks' JSON shows them."""
        lengths = sorted(self.session_events.values())
        return {
            "events": sum(lengths),
            "sessions": len(lengths),
            "tenants": len(self.tenants),
            "apps": len(self.apps),
            "longest_session_events": lengths[-1] if lengths else 0,
            "median_session_events": lengths[len(lengths) // 2] if lengths else 0,
            "events_by_kind": {kind: self.kinds[kind] for kind in EVENT_KINDS},
            "tool_calls": self.tool_calls,
            "state_deltas_by_scope": {scope: self.state_deltas[scope] for scope in SCOPES},
        }


def census_lines(figures: Mapping[str, Any]) -> list[str]:
    """``workload_<name> <value>`` lines of a census's figures (and a run's counts beside them).

    Example: ``{"events": 10, "events_by_kind": {"user": 2}}`` ->
    ``["workload_events 10", "workload_user_events 2"]``.
    """
    lines: list[str] = []
    for name, value in figures.items():
        if name in _BY_PART:
            suffix = _BY_PART[name]
            lines.extend(f"workload_{part}_{suffix} {count}" for part, count in value.items())
        else:
            lines.append(f"workload_{name} {value}")
    return lines
