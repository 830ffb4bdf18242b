"""The ingest benchmarks' records: many sessions of the core bench's workload, interleaved. Pure.

``ctxstream bench ingest`` produces these records to a topic and
``ctxstream bench fold`` folds them in memory, so both time the same work:
``sessions`` copies of the synthetic sessions of
:mod:`ctxstream.bench.workload` (a few distinct templates, each copy under
its own tenant, app, user and session), written one invocation burst of a
session at a time, as concurrent agents would write them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import orjson

from ctxstream.bench.workload import bench_session
from schemas.codec import encode

TEMPLATES: Final = 8  # distinct synthetic sessions the workload's sessions are copies of


def workload(
    events: int, sessions: int, *, tenant_prefix: str = "tenant"
) -> Iterator[tuple[bytes, bytes]]:
    """(key, value) records of the workload, one invocation burst of a session at a time."""
    per_session = -(-events // sessions)
    templates = []
    for seed in range(TEMPLATES):
        records = bench_session(per_session, seed=seed)
        templates.append([orjson.loads(encode(r.envelope)) for r in records])
    bursts: list[list[list[dict[str, Any]]]] = []
    for number in range(sessions):
        tenant = f"{tenant_prefix}{number % 16}"
        key = f"{tenant}/app{number % 4}/user{number}/session{number}"
        session: list[list[dict[str, Any]]] = []
        previous = None
        for row in templates[number % TEMPLATES]:
            copy = {**row, "tenant": tenant, "session_key": key}
            copy["idempotency_key"] = f"{key}#{row['idempotency_key']}"
            invocation = row["event"].get("invocationId")
            if session and invocation == previous:
                session[-1].append(copy)
            else:
                session.append([copy])
            previous = invocation
        bursts.append(session)
    produced = 0
    round_number = 0
    while produced < events:
        progressed = False
        for session in bursts:
            if round_number < len(session):
                progressed = True
                for row in session[round_number]:
                    if produced == events:
                        return
                    produced += 1
                    yield row["session_key"].encode(), orjson.dumps(row)
        if not progressed:
            return
        round_number += 1
