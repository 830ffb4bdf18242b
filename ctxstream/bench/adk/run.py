"""``ctxstream bench adk``: one run over every size, ctxstream in both views beside ADK's SQLite.

For each size: the workload's session (:mod:`ctxstream.bench.adk.workload`) bulk-loaded into
``SqliteSessionService`` and ``DatabaseSessionService`` on ``sqlite+aiosqlite``
(:mod:`ctxstream.bench.adk.baselines`, each read back equal through its own ``get_session``)
and appended to ctxstream (:mod:`ctxstream.bench.adk.deployment`; its ``full`` view must read
back equal too); then the turns of every service (:func:`ctxstream.bench.adk.measure.time_turns`:
all of them give the agent the same contents) and ``append_event`` on ctxstream in each view.
``baselines_only`` leaves ctxstream out (its figures are null). More in
``ctxstream/bench/README.md`` (adk).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from google.adk.sessions.base_session_service import BaseSessionService

from ctxstream.bench.adk.baselines import DSS_SQLITE, SQLITE, check_loaded, load_dss, load_sqlite
from ctxstream.bench.adk.deployment import (
    Deployment,
    close_service,
    ctxstream_deployment,
    load_session,
    session_service,
)
from ctxstream.bench.adk.measure import TurnFigures, time_appends, time_turns
from ctxstream.bench.adk.workload import AdkSession, adk_session

VIEWS: Final = ("full", "live")
#: The goals at :data:`GOAL_EVENTS` events: the faster ADK service's time over ctxstream's.
GOALS: Final = {"live": 20.0, "full": 1.0}
GOAL_EVENTS: Final = 10_000


@dataclass(frozen=True, slots=True)
class AdkBenchConfig:
    """What to measure: the session sizes, the timed turns and appends, ctxstream or not."""

    events: Sequence[int] = (100, 10_000)
    turns: int = 5
    appends: int = 50
    baselines_only: bool = False
    keep: bool = False


@dataclass(frozen=True, slots=True)
class AdkResult:
    """One size in one view: the per-turn medians (ms), appends, and what was returned."""

    events: int
    view: str | None
    ctxstream_ms: float | None
    adk_sqlite_ms: float
    adk_dss_sqlite_ms: float
    append_p95_ms: float | None
    append_p50_ms: float | None
    ctxstream_p95_ms: float | None
    adk_sqlite_p95_ms: float
    adk_dss_sqlite_p95_ms: float
    events_returned: int | None
    adk_events_returned: int
    contents: int
    speedup: float | None  # the faster ADK service's median over ctxstream's


async def run_adk_bench(config: AdkBenchConfig, dsn: str | None, run_dir: Path) -> list[AdkResult]:
    """Every size's results, ctxstream's views (unless baselines only) beside the baselines.

    Raises:
        RuntimeError: A service reads a session back unequal, or ctxstream.adk is missing.
        ValueError: ctxstream is measured and `dsn` is None.
    """
    logging.getLogger("google_adk").setLevel(logging.ERROR)  # the cut-off last call's warning
    results: list[AdkResult] = []
    async with AsyncExitStack() as stack:
        deployment = None
        if not config.baselines_only:
            if dsn is None:
                raise ValueError("bench adk: the ctxstream side needs a PostgreSQL DSN")
            deployment = await stack.enter_async_context(
                ctxstream_deployment(dsn, run_dir, keep=config.keep)
            )
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-adk-")))
        for events in config.events:
            session = adk_session(events)
            async with _services(folder, session, deployment) as services:
                turns = await time_turns(services, session, config.turns)
                results.extend(await _results(config, services, session, turns))
    return results


@asynccontextmanager
async def _services(
    folder: Path, session: AdkSession, deployment: Deployment | None
) -> AsyncIterator[dict[str, BaseSessionService]]:
    """The loaded services by name, checked: the baselines, then ctxstream's views."""
    services: dict[str, BaseSessionService] = {
        SQLITE: await load_sqlite(folder, session),
        DSS_SQLITE: await load_dss(folder, session),
    }
    try:
        for service in services.values():
            await check_loaded(service, session)
        if deployment is not None:
            await load_session(deployment, session)
            for view in VIEWS:
                services[view] = session_service(deployment, view)
            await check_loaded(services["full"], session, update_time=False)
        yield services
    finally:
        for service in services.values():
            await close_service(service)


async def _results(
    config: AdkBenchConfig,
    services: dict[str, BaseSessionService],
    session: AdkSession,
    turns: dict[str, TurnFigures],
) -> list[AdkResult]:
    if config.baselines_only:
        return [_result(turns, None, None)]
    results = []
    for view in VIEWS:
        appends = await time_appends(services[view], session, config.appends)
        results.append(_result(turns, view, appends))
    return results


def _result(
    turns: dict[str, TurnFigures], view: str | None, appends: tuple[float, float] | None
) -> AdkResult:
    """One row: the baselines' figures and, for a `view`, ctxstream's in it."""
    sqlite, dss = turns[SQLITE], turns[DSS_SQLITE]
    ours = turns[view] if view is not None else None
    return AdkResult(
        events=sqlite.events_returned,
        view=view,
        ctxstream_ms=ours.ms if ours else None,
        adk_sqlite_ms=sqlite.ms,
        adk_dss_sqlite_ms=dss.ms,
        append_p95_ms=appends[1] if appends else None,
        append_p50_ms=appends[0] if appends else None,
        ctxstream_p95_ms=ours.p95_ms if ours else None,
        adk_sqlite_p95_ms=sqlite.p95_ms,
        adk_dss_sqlite_p95_ms=dss.p95_ms,
        events_returned=ours.events_returned if ours else None,
        adk_events_returned=sqlite.events_returned,
        contents=sqlite.contents,
        speedup=round(min(sqlite.ms, dss.ms) / ours.ms, 2) if ours else None,
    )


def report_text(results: Sequence[AdkResult]) -> str:
    """One line per size and view, then each view's ratio against its goal."""
    lines = [
        f"{'events':>7} {'view':<9}{'ctxstream':>11}{'sqlite':>10}{'dss':>10}"
        f"{'returned':>10}{'append p50/p95':>18}"
    ]
    for r in results:
        ours = "-" if r.ctxstream_ms is None else f"{r.ctxstream_ms:.1f}"
        appends = "-" if r.append_p95_ms is None else f"{r.append_p50_ms:.1f}/{r.append_p95_ms:.1f}"
        returned = r.adk_events_returned if r.events_returned is None else r.events_returned
        lines.append(
            f"{r.events:>7} {r.view or 'adk':<9}{ours:>11}{r.adk_sqlite_ms:>10.1f}"
            f"{r.adk_dss_sqlite_ms:>10.1f}{returned:>10}{appends:>18}"
        )
    for r in results:
        if r.speedup is not None and r.view is not None:
            goal = (
                f" (goal at {GOAL_EVENTS:,}: >= {GOALS[r.view]:g}x)"
                if r.events == GOAL_EVENTS
                else ""
            )
            lines.append(
                f"ratio {r.view} at {r.events:,} events: faster ADK SQLite service / ctxstream"
                f" = {r.speedup:g}x{goal}"
            )
    return "".join(f"{line}\n" for line in lines)
