"""The agents workload's sessions: whose they are, how long, and when they run. Pure.

No I/O, no clock, no randomness: every choice hashes the seed and the
session's number (:func:`ctxstream.bench.agents.prose.pick`).

* **Tenant and app**: drawn by :data:`~ctxstream.bench.agents.apps.TENANT_WEIGHTS`
  and each app's ``weight``; the user by a skew (``u0`` has the most sessions).
* **Length, a long tail**: the sessions' lengths follow the quantiles of a
  Pareto distribution of shape :data:`PARETO_SHAPE`, ``((rank + 0.5) / S) ^
  (-1 / shape)``, scaled so they sum to the workload's events; the hash only
  decides which session gets which rank. So the shape is the same for every
  seed: of 2,000 sessions over 200,000 events the longest has 15,080
  events, the top 1% hold 27% of all, the median has 45 and the shortest 27
  (about five invocations).
* **Schedule**: about :func:`default_concurrency` sessions run at once. The
  schedule runs ``H`` rounds, the estimated invocations of all sessions over
  that concurrency; a session of ``k <= H`` invocations runs one a round from
  a start the hash places in ``[0, H - k]``, a longer one ``k / H`` a round
  from round 0, so the long sessions run alongside the others from start to end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from ctxstream.bench.agents.apps import APPS, TENANT_WEIGHTS, AppProfile, tenant_names
from ctxstream.bench.agents.prose import pick

PARETO_SHAPE: Final = 1.3
USERS_PER_TENANT: Final = 50
_PLACES: Final = 1_000_000  # resolution of a hashed fraction


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One session of the workload.

    Attributes:
        number: Its place among the workload's sessions.
        key: ``tenant/app/user/session``.
        tenant: Its tenant.
        app: Its app.
        events: Its length in the workload (its last invocation may be cut).
        start: The round of its first invocation.
        pace: Rounds between two of its invocations (1, or less for a long session).
    """

    number: int
    key: str
    tenant: str
    app: AppProfile
    events: int
    start: float
    pace: float


def default_concurrency(sessions: int) -> int:
    """About how many sessions run at once: a quarter of them, at least one."""
    return max(1, sessions // 4)


def plan_sessions(
    events: int,
    sessions: int,
    *,
    tenant_prefix: str = "tenant",
    seed: int = 0,
    concurrency: int | None = None,
) -> list[SessionPlan]:
    """The workload's sessions, in number order.

    Raises:
        ValueError: `sessions` is not positive, or `events` is below `sessions`
            (every session has at least one event).
    """
    if sessions < 1 or events < sessions:
        raise ValueError(f"need 1 <= sessions <= events, got {sessions} sessions, {events} events")
    lengths = session_lengths(events, sessions, seed=seed)
    owners = [_owner(number, tenant_prefix, seed) for number in range(sessions)]
    estimates = [
        max(1, math.ceil(length / app.mean_invocation_events))
        for length, (_, app, _) in zip(lengths, owners, strict=True)
    ]
    horizon = max(1.0, sum(estimates) / (concurrency or default_concurrency(sessions)))
    plans = []
    for number, (length, (tenant, app, user), estimate) in enumerate(
        zip(lengths, owners, estimates, strict=True)
    ):
        if estimate <= horizon:
            pace = 1.0
            start = (horizon - estimate) * _fraction(seed, f"start{number}")
        else:
            pace = horizon / estimate
            start = pace * _fraction(seed, f"start{number}")
        key = f"{tenant}/{app.name}/{user}/s{number}"
        plans.append(SessionPlan(number, key, tenant, app, length, start, pace))
    return plans


def session_lengths(events: int, sessions: int, *, seed: int = 0) -> list[int]:
    """Each session's events: Pareto quantiles summing to `events`, at least one each.

    Example: ``session_lengths(1000, 4)`` is ``[116, 221, 513, 150]``: the
    quantiles 513, 221, 150 and 116, in the order seed 0 picks.
    """
    ranks = sorted(range(sessions), key=lambda number: pick(seed, f"rank{number}", 2**62))
    weights = [0.0] * sessions
    for rank, number in enumerate(ranks):
        weights[number] = ((rank + 0.5) / sessions) ** (-1 / PARETO_SHAPE)
    spare = events - sessions  # one event each, the rest by weight (largest remainders)
    total = sum(weights)
    shares = [spare * weight / total for weight in weights]
    lengths = [1 + math.floor(share) for share in shares]
    left = events - sum(lengths)
    by_remainder = sorted(range(sessions), key=lambda n: (shares[n] - math.floor(shares[n]), -n))
    for number in by_remainder[len(by_remainder) - left :]:
        lengths[number] += 1
    return lengths


def _owner(number: int, tenant_prefix: str, seed: int) -> tuple[str, AppProfile, str]:
    """The session's tenant, app and user."""
    tenants = tenant_names(tenant_prefix)
    tenant = tenants[_weighted(seed, f"tenant{number}", TENANT_WEIGHTS)]
    app = APPS[_weighted(seed, f"app{number}", tuple(app.weight for app in APPS))]
    skew = _fraction(seed, f"user{number}")
    user = f"u{int(USERS_PER_TENANT * skew * skew)}"
    return tenant, app, user


def _weighted(seed: int, position: str, weights: tuple[int, ...]) -> int:
    """An index drawn with the given weights."""
    drawn = pick(seed, position, sum(weights))
    for index, weight in enumerate(weights):
        if drawn < weight:
            return index
        drawn -= weight
    raise AssertionError("unreachable: drawn is below the sum of the weights")


def _fraction(seed: int, position: str) -> float:
    """A hashed fraction in ``[0, 1)``."""
    return pick(seed, position, _PLACES) / _PLACES
