"""``ctxstream bench neighbours``: a quiet tenant's round trips, alone and beside a noisy one.

One run, against a deployment of its own (:mod:`ctxstream.bench.neighbours_deployment`:
a native projector and the HTTP API as child processes, a key per tenant); the steps are
in ``ctxstream/bench/README.md`` (neighbours.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.queues
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Final

import aiohttp
import orjson

from ctxstream.bench.neighbours_deployment import (
    BIG_SESSION,
    NOISY_TENANT,
    OVER_CAP_SESSION,
    QUIET_TENANT,
    ServedDeployment,
    served_deployment,
    until_answered,
)
from ctxstream.bench.neighbours_noisy import (
    NoisyLoad,
    NoisyTargets,
    Outcomes,
    run_noisy_tenant,
    user_event,
)
from ctxstream.bench.report import figures_json, percentile, write_report
from ctxstream.cli.common import Subcommands, fail, non_negative, positive
from schemas.kafka.settings import KafkaSettings
from schemas.read_protocol import DEFAULT_READ_WAIT_S

logger = logging.getLogger(__name__)

DEFAULT_SECONDS: Final = 20.0
DEFAULT_QUIET_SESSIONS: Final = 4
DEFAULT_BIG_SESSION_EVENTS: Final = 20_000
#: The quiet tenant's pause between one round trip and the next of a session.
QUIET_PAUSE_S: Final = 0.1
#: How long a quiet read waits for its own write: three times the API's default, so that
#: a round trip the noisy tenant slowed counts in the p99 as slow, and only one that was
#: not answered at all counts as failed.
QUIET_READ_WAIT_S: Final = 3 * DEFAULT_READ_WAIT_S
#: A quiet round trip unanswered this long is a failure (``timeout``).
QUIET_TIMEOUT_S: Final = 60.0
#: How long the noisy tenant's process may take to stop and report.
NOISY_STOP_S: Final = 60.0
#: The noisy tenant runs this long before the quiet one is timed beside it.
NOISY_RAMP_S: Final = 1.0
#: Untimed round trips before the first phase (connections, first reads).
WARMUP_ROUND_TRIPS: Final = 5


@dataclass(frozen=True, slots=True)
class NeighboursBenchConfig:
    """What to run: phase length, the quiet tenant's sessions, the noisy tenant's load."""

    seconds: float = DEFAULT_SECONDS
    quiet_sessions: int = DEFAULT_QUIET_SESSIONS
    big_session_events: int = DEFAULT_BIG_SESSION_EVENTS
    again: bool = True
    load: NoisyLoad = field(default_factory=NoisyLoad)
    run_dir: Path = Path(".run/bench-neighbours")


@dataclass(frozen=True, slots=True)
class QuietPhase:
    """The quiet tenant's round trips of one phase; times in milliseconds.

    Attributes:
        name: ``alone``, ``with_noisy`` or ``alone_again``.
        seconds: From the phase's first round trip to the end of its last.
        round_trips: Round trips made (failed ones included).
        failures: Failed round trips by kind (``append 503``, ``read 504``,
            ``timeout``, ``error``, ``unseen``: answered without its write).
    """

    name: str
    seconds: float
    round_trips: int
    failures: dict[str, int]
    p50_ms: float
    p99_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class NeighboursBenchReport:
    """Every phase, the noisy requests' outcomes, and what the run was given."""

    phases: tuple[QuietPhase, ...]
    noisy_outcomes: dict[str, dict[str, int]]
    load: NoisyLoad
    session_max_bytes: int
    big_session_events: int
    exited: dict[str, int]
    """The processes that exited during the run (the run's figures after that mean little)."""
    logs: str
    """The folder of the projector's and the API's logs."""

    def phase(self, name: str) -> QuietPhase:
        """The phase called `name`."""
        return next(phase for phase in self.phases if phase.name == name)

    @property
    def alone(self) -> QuietPhase:
        """The phase alone with the lower p99 (of ``alone`` and ``alone_again``)."""
        alone = [phase for phase in self.phases if phase.name != "with_noisy"]
        return min(alone, key=lambda phase: phase.p99_ms)

    @property
    def ratio(self) -> float:
        """The quiet p99 with the noisy tenant over the better p99 alone."""
        return round(self.phase("with_noisy").p99_ms / max(self.alone.p99_ms, 1e-9), 3)

    def to_json(self) -> str:
        """The three figures of issue #21 first, then the p50s, every phase and the outcomes."""
        noisy = self.phase("with_noisy")
        figures = {
            "quiet_p99_ms_alone": self.alone.p99_ms,
            "quiet_p99_ms_with_noisy": noisy.p99_ms,
            "ratio": self.ratio,
            "quiet_p50_ms_alone": self.alone.p50_ms,
            "quiet_p50_ms_with_noisy": noisy.p50_ms,
            "quiet_failures": sum(sum(phase.failures.values()) for phase in self.phases),
            "phases": [asdict(phase) for phase in self.phases],
            "noisy_outcomes": self.noisy_outcomes,
            "noisy_load": asdict(self.load),
            "session_max_bytes": self.session_max_bytes,
            "big_session_events": self.big_session_events,
            "exited": self.exited,
            "logs": self.logs,
        }
        return figures_json(figures)


class _QuietTenant:
    """The quiet tenant's round trips against the API."""

    def __init__(self, http: aiohttp.ClientSession, url: str, secret: str) -> None:
        self._http = http
        self._url = url
        self._auth = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    async def round_trip(self, session: str, text: str) -> tuple[float, str | None]:
        """Append `text` to `session`, then read the context that shows it; seconds, failure."""
        started = time.perf_counter()
        failure = None
        try:
            async with asyncio.timeout(QUIET_TIMEOUT_S):
                failure = await self._append_and_read(session, text)
        except TimeoutError:
            failure = "timeout"
        except aiohttp.ClientError:
            failure = "error"
        return time.perf_counter() - started, failure

    async def _append_and_read(self, session: str, text: str) -> str | None:
        route = f"{self._url}/v1/sessions/{session}"
        body = orjson.dumps(user_event(text))
        async with self._http.post(f"{route}/events", data=body, headers=self._auth) as answer:
            appended = await answer.read()
            if answer.status != 200:
                return f"append {answer.status}"
        params = {"min_offset": orjson.loads(appended)["offset"], "timeout_s": QUIET_READ_WAIT_S}
        async with self._http.get(f"{route}/context", params=params, headers=self._auth) as answer:
            context = await answer.read()
            if answer.status != 200:
                return f"read {answer.status}"
        return None if orjson.dumps(text) in context else "unseen"

    async def phase(self, name: str, config: NeighboursBenchConfig) -> QuietPhase:
        """Round trips of every quiet session until ``config.seconds`` have passed."""
        samples: list[float] = []
        failures: Counter[str] = Counter()
        started = time.monotonic()
        deadline = started + config.seconds

        async def session_loop(index: int) -> None:
            session = f"{QUIET_TENANT}/quiet/u{index}/{name}"
            number = 0
            while time.monotonic() < deadline:
                seconds, failure = await self.round_trip(session, f"<{name} {index} {number}>")
                samples.append(seconds)
                if failure is not None:
                    failures[failure] += 1
                number += 1
                await asyncio.sleep(QUIET_PAUSE_S)

        async with asyncio.TaskGroup() as group:
            for index in range(config.quiet_sessions):
                group.create_task(session_loop(index))
        phase = QuietPhase(
            name=name,
            seconds=round(time.monotonic() - started, 3),
            round_trips=len(samples),
            failures=dict(sorted(failures.items())),
            p50_ms=_ms(statistics.median(samples)),
            p99_ms=_ms(percentile(samples, 0.99)),
            max_ms=_ms(max(samples)),
        )
        logger.info("bench neighbours phase %s", phase)
        return phase


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def _ready(deployment: ServedDeployment, quiet: _QuietTenant, noisy_auth: str) -> None:
    """Wait until the quiet round trip works and the prepared sessions are folded."""
    warmup = f"{QUIET_TENANT}/quiet/warmup/s"

    async def answered() -> bool:
        return (await quiet.round_trip(warmup, "<warmup>"))[1] is None

    await until_answered(deployment, "the API and the projector did not answer", answered)
    for number in range(WARMUP_ROUND_TRIPS):
        await quiet.round_trip(warmup, f"<warmup {number}>")
    headers = {"Authorization": f"Bearer {noisy_auth}"}
    async with aiohttp.ClientSession() as http:
        for session, offset in (
            (BIG_SESSION, deployment.big_offsets[-1]),
            (OVER_CAP_SESSION, deployment.over_cap_last_offset),
        ):
            url = f"{deployment.url}/v1/sessions/{session}/projection"
            params = {"min_offset": offset, "timeout_s": QUIET_READ_WAIT_S}

            async def folded(url: str = url, params: dict[str, int | float] = params) -> bool:
                async with http.get(url, params=params, headers=headers) as answer:
                    await answer.read()
                    return answer.status == 200

            await until_answered(deployment, f"{session} was not folded", folded)


async def _with_noisy(
    quiet: _QuietTenant, deployment: ServedDeployment, config: NeighboursBenchConfig
) -> tuple[QuietPhase, dict[str, dict[str, int]]]:
    targets = NoisyTargets(
        url=deployment.url,
        tenant=NOISY_TENANT,
        secret=deployment.noisy_secret,
        key_id=deployment.noisy_key_id,
        big_session=BIG_SESSION,
        big_offsets=deployment.big_offsets,
        over_cap_session=OVER_CAP_SESSION,
    )
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    results: multiprocessing.queues.Queue[dict[str, dict[str, int]]] = spawn.Queue()
    noisy = spawn.Process(
        target=_noisy_process, args=(config.load, targets, stop, results), name="noisy-tenant"
    )
    noisy.start()
    try:
        await asyncio.sleep(NOISY_RAMP_S)
        phase = await quiet.phase("with_noisy", config)
    finally:
        stop.set()
    outcomes = await asyncio.to_thread(results.get, True, NOISY_STOP_S)
    await asyncio.to_thread(noisy.join, NOISY_STOP_S)
    return phase, outcomes


def _noisy_process(
    load: NoisyLoad,
    targets: NoisyTargets,
    stop: Event,
    results: multiprocessing.queues.Queue[dict[str, dict[str, int]]],
) -> None:
    """The noisy tenant's process: every pattern until `stop` is set, then its outcomes."""

    async def until_stopped() -> dict[str, dict[str, int]]:
        outcomes = Outcomes()
        connector = aiohttp.TCPConnector(limit=0)  # every noisy loop has a connection of its own
        async with aiohttp.ClientSession(connector=connector) as http:
            noisy = asyncio.create_task(run_noisy_tenant(http, load, targets, outcomes))
            # `stop` is another process's: waited for in a thread, a tenth of a second at a time.
            while not noisy.done() and not await asyncio.to_thread(stop.wait, 0.1):
                pass
            noisy.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await noisy  # a noisy loop's own failure (a bug) is raised here
        return {pattern: dict(counts) for pattern, counts in outcomes.as_dict().items()}

    results.put(asyncio.run(until_stopped()))


async def run_neighbours_bench(
    base: KafkaSettings, config: NeighboursBenchConfig | None = None
) -> NeighboursBenchReport:
    """Serve a deployment of its own, then run the phases on it, in one run."""
    config = config or NeighboursBenchConfig()
    async with (
        served_deployment(base, config.run_dir, config.big_session_events) as deployment,
        aiohttp.ClientSession() as http,
    ):
        quiet = _QuietTenant(http, deployment.url, deployment.quiet_secret)
        await _ready(deployment, quiet, deployment.noisy_secret)
        phases = [await quiet.phase("alone", config)]
        with_noisy, outcomes = await _with_noisy(quiet, deployment, config)
        phases.append(with_noisy)
        if config.again:
            phases.append(await quiet.phase("alone_again", config))
        exited = deployment.exits()
    return NeighboursBenchReport(
        phases=tuple(phases),
        noisy_outcomes=outcomes,
        load=config.load,
        session_max_bytes=deployment.session_max_bytes,
        big_session_events=config.big_session_events,
        exited=exited,
        logs=str(deployment.run_dir),
    )


def report_text(report: NeighboursBenchReport) -> str:
    """One figure per line: the quiet p50s and p99s, the ratio, the phases, the noisy outcomes."""
    alone, noisy = report.alone, report.phase("with_noisy")
    lines = [
        f"quiet p50 alone            {alone.p50_ms:>10.1f} ms ({alone.name})",
        f"quiet p99 alone            {alone.p99_ms:>10.1f} ms ({alone.name})",
        f"quiet p50 with noisy       {noisy.p50_ms:>10.1f} ms",
        f"quiet p99 with noisy       {noisy.p99_ms:>10.1f} ms",
        f"ratio                      {report.ratio:>10.2f} (p99 with noisy / alone; goal: <= 2)",
    ]
    for phase in report.phases:
        failed = sum(phase.failures.values())
        kinds = "".join(f" {kind}={count}" for kind, count in phase.failures.items())
        lines.append(
            f"phase {phase.name:<12} {phase.round_trips:>6} round trips, {failed} failed{kinds}; "
            f"p50 {phase.p50_ms:.1f} ms, p99 {phase.p99_ms:.1f} ms, max {phase.max_ms:.1f} ms"
        )
    for pattern, counts in report.noisy_outcomes.items():
        shown = " ".join(f"{outcome}={count}" for outcome, count in counts.items())
        lines.append(f"noisy {pattern:<20} {shown}")
    lines.extend(
        f"EXITED {name} with status {status} during the run (log: {report.logs}/{name}.log)"
        for name, status in report.exited.items()
    )
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``neighbours`` to the ``bench`` subcommands: an option per field of the load."""
    neighbours = bench_commands.add_parser(
        "neighbours",
        help="a quiet tenant's append plus read-your-writes through the HTTP API, alone and "
        "while a noisy tenant runs every costly pattern at once, in one run",
    )
    neighbours.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    neighbours.add_argument(
        "--seconds", type=float, default=20.0, help="each phase's length (default 20)"
    )
    neighbours.add_argument(
        "--again",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the quiet tenant alone again after the noisy phase (default: yes)",
    )
    counts = {
        "quiet-sessions": (4, "quiet sessions, each a loop of round trips"),
        "big-session-events": (20_000, "events of the session as-of reads and forks use"),
        "parked-reads": (12, "context reads waiting for a far min_offset"),
        "as-of-reads": (4, "as-of reads of the big session at once"),
        "forks": (2, "forks of the big session at once"),
        "batches": (1, "loops of events:batch"),
        "batch-events": (1_000, "events per batch"),
        "huge-batch-events": (200_000, "events of the batch sent now and then"),
        "subscriptions": (8, "subscriptions opened and dropped at once"),
        "wrong-secrets": (32, "requests with a wrong secret of the noisy key at once"),
        "over-cap-appends": (2, "appends at once to a session past its size cap"),
    }
    for name, (default, what) in counts.items():
        is_positive = name in ("quiet-sessions", "big-session-events")
        neighbours.add_argument(
            f"--{name}",
            type=positive if is_positive else non_negative,
            default=default,
            help=f"{what} (default {default}{'' if is_positive else '; 0: none'})",
        )
    neighbours.add_argument(
        "--huge-batch-every-s",
        type=float,
        default=15.0,
        help="pause after each huge batch (default 15)",
    )
    neighbours.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    # Each field of the load has an option of the same name (--parked-reads: parked_reads).
    load = NoisyLoad(**{part.name: getattr(args, part.name) for part in fields(NoisyLoad)})
    config = NeighboursBenchConfig(
        seconds=args.seconds,
        quiet_sessions=args.quiet_sessions,
        big_session_events=args.big_session_events,
        again=args.again,
        load=load,
    )
    report = asyncio.run(run_neighbours_bench(KafkaSettings(), config))
    write_report(args.json, report.to_json(), report_text(report), sys.stdout)
    if report.exited:
        return fail("bench neighbours", f"processes exited during the run: {report.exited}")
    return 0
