"""The noisy tenant of ``ctxstream bench neighbours``: every costly pattern of the review at once.

Each pattern is a number of concurrent loops against the HTTP API, each loop
sending one request after another until it is cancelled (or has sent
:data:`MAX_REQUESTS_PER_LOOP`). What every request came to is counted by
pattern and outcome (:class:`Outcomes`): its HTTP status (``"200"``,
``"401"``, ``"413"``, ``"422"``, ``"429"``, ...), ``"timeout"`` (no answer
within :data:`REQUEST_TIMEOUT_S`), ``"error"`` (the connection failed) or
``"open"`` (still unanswered when the loop was cancelled), so
a run shows which budgets acted. The patterns (issue #21, the security
review's probes P2-P8), at a concurrency a little above the budgets the API
is to have; the steps are in ``ctxstream/bench/README.md`` (neighbours_noisy.py).
"""

from __future__ import annotations

import asyncio
import io
import itertools
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import aiohttp
import orjson

from ctxstream.api.keys import SECRET_PREFIX
from schemas.json_bounds import INT64_MAX
from schemas.read_protocol import MAX_READ_WAIT_S

#: Requests one loop sends at most (a loop normally ends with its phase).
MAX_REQUESTS_PER_LOOP: Final = 1_000_000
#: A noisy request unanswered this long counts as ``"timeout"``.
REQUEST_TIMEOUT_S: Final = 120.0
#: The longest wait a 429's ``Retry-After`` buys.
MAX_RETRY_PAUSE_S: Final = 1.0
#: The wait after a refusal other than 429 (so a refused loop does not spin).
REFUSAL_PAUSE_S: Final = 0.1
#: How long a dropped subscription stays open, reading what comes.
SUBSCRIPTION_HOLD_S: Final = 1.0
#: A parked read waits for an offset no partition reaches.
FAR_OFFSET: Final = INT64_MAX - 1
#: The events of the batches: the smallest an append takes (the review's probe P6).
BATCH_EVENT: Final = {"author": "user", "timestamp": 1}
#: Characters of the made-up part of a wrong secret (a real token's length).
WRONG_TOKEN_CHARS: Final = 43

Outcome = str
"""An HTTP status as text (``"429"``), ``"timeout"``, ``"error"`` or ``"open"``."""
TimedOutcome = tuple[Outcome, float]
"""A request's outcome and the seconds its ``Retry-After`` asked for (0 when none)."""


@dataclass(frozen=True, slots=True)
class NoisyLoad:
    """How many loops of each pattern run at once, and the batches' sizes."""

    parked_reads: int = 12
    as_of_reads: int = 4
    forks: int = 2
    batches: int = 1
    batch_events: int = 1_000
    huge_batch_events: int = 200_000
    huge_batch_every_s: float = 15.0
    subscriptions: int = 8
    wrong_secrets: int = 32
    over_cap_appends: int = 2


@dataclass(frozen=True, slots=True)
class NoisyTargets:
    """What the noisy tenant aims at, prepared before the run.

    Attributes:
        url: The HTTP API, ``http://127.0.0.1:<port>``.
        tenant: The noisy tenant.
        secret: Its API key.
        key_id: That key's id (what the wrong secrets name).
        big_session: A session of many records (as-of reads and forks).
        big_offsets: Its records' offsets, in order.
        over_cap_session: A session already past the worker's size cap.
    """

    url: str
    tenant: str
    secret: str
    key_id: str
    big_session: str
    big_offsets: Sequence[int]
    over_cap_session: str


@dataclass(slots=True)
class Outcomes:
    """What the noisy requests came to, counted by pattern and outcome."""

    counts: dict[str, Counter[Outcome]] = field(default_factory=dict)

    def note(self, pattern: str, outcome: Outcome) -> None:
        """Count one request of `pattern`."""
        self.counts.setdefault(pattern, Counter())[outcome] += 1

    def as_dict(self) -> dict[str, dict[Outcome, int]]:
        """``{pattern: {outcome: count}}``, patterns and outcomes sorted."""
        return {
            pattern: dict(sorted(counts.items())) for pattern, counts in sorted(self.counts.items())
        }


def user_event(text: str) -> dict[str, object]:
    """A user's event saying `text`."""
    return {
        "author": "user",
        "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"text": text}]},
    }


async def run_noisy_tenant(
    http: aiohttp.ClientSession, load: NoisyLoad, targets: NoisyTargets, outcomes: Outcomes
) -> None:
    """Run every pattern's loops until cancelled; each request's outcome goes to `outcomes`."""
    noisy = _NoisyRequests(http, load, targets, outcomes)
    loops: Mapping[str, tuple[int, Callable[[], Awaitable[TimedOutcome]]]] = {
        "parked_reads": (load.parked_reads, noisy.parked_read),
        "as_of_reads": (load.as_of_reads, noisy.as_of_read),
        "forks": (load.forks, noisy.fork),
        "batches": (load.batches if load.batch_events else 0, noisy.batch),
        "huge_batch": (1 if load.huge_batch_events else 0, noisy.huge_batch),
        "subscriptions": (load.subscriptions, noisy.subscription),
        "wrong_secrets": (load.wrong_secrets, noisy.wrong_secret),
        "over_cap": (load.over_cap_appends, noisy.over_cap_append),
    }
    async with asyncio.TaskGroup() as group:
        for pattern, (count, request) in loops.items():
            for _ in range(count):
                group.create_task(noisy.loop(pattern, request))


class _NoisyRequests:
    """One request of each pattern, and the loop that repeats one."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        load: NoisyLoad,
        targets: NoisyTargets,
        outcomes: Outcomes,
    ) -> None:
        self._http = http
        self._load = load
        self._targets = targets
        self._outcomes = outcomes
        self._auth = {"Authorization": f"Bearer {targets.secret}"}
        self._numbers = itertools.count()
        self._random = random.Random(21)  # noqa: S311 - which offset to read, not a secret
        self._batch_body = orjson.dumps({"events": [BATCH_EVENT] * load.batch_events})
        self._huge_body = orjson.dumps({"events": [BATCH_EVENT] * load.huge_batch_events})

    def _session(self, kind: str) -> str:
        return f"{self._targets.tenant}/noisy/{kind}/n{next(self._numbers)}"

    def _path(self, session: str, route: str) -> str:
        return f"{self._targets.url}/v1/sessions/{session}/{route}"

    async def loop(self, pattern: str, request: Callable[[], Awaitable[TimedOutcome]]) -> None:
        """Send `request` again and again, counting outcomes and pausing after refusals."""
        for _ in range(MAX_REQUESTS_PER_LOOP):
            try:
                outcome, retry_after = await self._timed(request)
            except asyncio.CancelledError:
                self._outcomes.note(pattern, "open")  # still waiting when the phase ended
                raise
            self._outcomes.note(pattern, outcome)
            if pattern == "huge_batch":
                await asyncio.sleep(self._load.huge_batch_every_s)
            elif outcome == "429":
                await asyncio.sleep(min(retry_after, MAX_RETRY_PAUSE_S))
            elif outcome == "error" or (outcome != "200" and pattern != "wrong_secrets"):
                await asyncio.sleep(REFUSAL_PAUSE_S)

    async def _timed(self, request: Callable[[], Awaitable[TimedOutcome]]) -> TimedOutcome:
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_S):
                return await request()
        except TimeoutError:
            return "timeout", 0.0
        except aiohttp.ClientError:
            return "error", 0.0

    async def _send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int | float] | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> TimedOutcome:
        """One request, its answer read whole."""
        sent = {**(headers or self._auth), "Content-Type": "application/json"}
        async with self._http.request(
            method,
            url,
            params=params,
            data=None if body is None else io.BytesIO(body),  # large: no copy on the loop
            headers=sent,
        ) as answer:
            await answer.read()
            return _answer(answer)

    async def parked_read(self) -> TimedOutcome:
        """A context read of an empty session that waits for an offset no partition reaches."""
        params = {"min_offset": FAR_OFFSET, "timeout_s": MAX_READ_WAIT_S}
        return await self._send(
            "GET", self._path(self._session("parked"), "context"), params=params
        )

    async def as_of_read(self) -> TimedOutcome:
        """The big session's context as of one of its offsets, picked at random."""
        offset = self._random.choice(self._targets.big_offsets)
        url = self._path(self._targets.big_session, "context")
        return await self._send("GET", url, params={"as_of": offset, "timeout_s": 60})

    async def fork(self) -> TimedOutcome:
        """A fork of the big session at its last offset, into a new session."""
        body = {
            "at_offset": self._targets.big_offsets[-1],
            "new_session_key": self._session("fork"),
        }
        url = self._path(self._targets.big_session, "fork")
        return await self._send("POST", url, body=orjson.dumps(body))

    async def batch(self) -> TimedOutcome:
        """``batch_events`` events into a new session."""
        url = self._path(self._session("batch"), "events:batch")
        return await self._send("POST", url, body=self._batch_body)

    async def huge_batch(self) -> TimedOutcome:
        """``huge_batch_events`` events into a new session."""
        url = self._path(self._session("huge"), "events:batch")
        return await self._send("POST", url, body=self._huge_body)

    async def over_cap_append(self) -> TimedOutcome:
        """One event more for the session past its size cap."""
        url = self._path(self._targets.over_cap_session, "events")
        return await self._send("POST", url, body=orjson.dumps(user_event("over the cap")))

    async def wrong_secret(self) -> TimedOutcome:
        """A projection read with a secret that names the tenant's key id but is not its own."""
        wrong = f"{SECRET_PREFIX}_{self._targets.key_id}_{'A' * WRONG_TOKEN_CHARS}"
        url = self._path(f"{self._targets.tenant}/noisy/u/s", "projection")
        return await self._send("GET", url, headers={"Authorization": f"Bearer {wrong}"})

    async def subscription(self) -> TimedOutcome:
        """A subscription to the tenant's snapshots, read for a moment, then dropped."""
        url = f"{self._targets.url}/v1/tenants/{self._targets.tenant}/projections:subscribe"
        async with self._http.get(url, headers=self._auth) as answer:
            if answer.status == 200:
                try:
                    async with asyncio.timeout(SUBSCRIPTION_HOLD_S):
                        while await answer.content.readany():
                            pass
                except TimeoutError:
                    pass
            answer.close()  # dropped as a client that goes away drops it
            return _answer(answer)


def _answer(answer: aiohttp.ClientResponse) -> TimedOutcome:
    try:
        retry_after = float(answer.headers.get("Retry-After", "0"))
    except ValueError:
        retry_after = MAX_RETRY_PAUSE_S
    return str(answer.status), retry_after
