"""The agents workload's tenants and apps: agents, tools, compaction configs. Pure: no I/O.

Four apps, each a root agent with its own tools and its own compaction config,
which the projector is given per ``tenant/app`` (:func:`compaction_overrides`),
so it decides requests on these sessions by both of ADK's triggers:

=============  ================  ===============================  ==================
app            agent             tools (response size)            compaction
=============  ================  ===============================  ==================
``support``    support_agent     lookup_order, search_kb,         sliding window 4/1
                                 issue_refund
``research``   research_agent    web_search, fetch_page (long;    token threshold
                                 two fetches at once, 1 in 3)     6,000 / 6
``coder``      coding_agent      read_file (long), run_tests,     both: 6/1 and
                                 apply_patch                      8,000 / 8
``chat``       assistant         get_weather (0-1 calls)          sliding window 8/2
=============  ================  ===============================  ==================

Every tenant runs every app; a session's tenant and app are drawn by the
weights below (:mod:`ctxstream.bench.agents.plan`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from projections.compaction.config import CompactionConfig


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool an app's agent calls.

    Attributes:
        name: The function's name.
        response_chars: About how many characters of text its response carries.
        args_chars: About how many characters of text its call's arguments carry.
        state_key: The state key its response writes (scope prefix included:
            ``user:``, ``app:``, none for the session), or None.
    """

    name: str
    response_chars: int
    args_chars: int = 40
    state_key: str | None = None


@dataclass(frozen=True, slots=True)
class AppProfile:
    """One app of the workload: what its agent does in an invocation and how it compacts.

    Attributes:
        name: The app's name, the second segment of its session keys.
        agent: The root agent's name: the author of its model events, and the
            agent the projector's view is for (``view_agent_names``).
        weight: Its share of the sessions, relative to the other apps'.
        tool_rounds: The fewest and most call/response rounds of an invocation.
        parallel_every: One round in this many calls two tools at once (0: never).
        system_tokens: The prompt's tokens before any event (instruction, tools).
        context_reset_tokens: The simulated agent's prompt falls back after an
            invocation whose prompt reached this (the summary it then sees).
        tools: What the agent calls.
        compaction: The app's compaction config, given to the projector.
    """

    name: str
    agent: str
    weight: int
    tool_rounds: tuple[int, int]
    parallel_every: int
    system_tokens: int
    context_reset_tokens: int
    tools: tuple[Tool, ...]
    compaction: CompactionConfig

    @property
    def mean_invocation_events(self) -> float:
        """About how many events one invocation has (for the schedule, not exact)."""
        low, high = self.tool_rounds
        # A question, half the time a model text, two events a round, the answer, a third
        # of the time a state event.
        return 1 + 0.5 + (low + high) + 1 + 1 / 3


_Row = tuple[str, str, int, tuple[int, int], int, int, int]
#: name, agent, weight, tool rounds, parallel every, system tokens, context reset tokens.
_ROWS: Final[tuple[_Row, ...]] = (
    ("support", "support_agent", 40, (1, 3), 0, 900, 5_000),
    ("research", "research_agent", 20, (2, 4), 3, 1_200, 6_000),
    ("coder", "coding_agent", 15, (2, 5), 4, 1_500, 8_000),
    ("chat", "assistant", 25, (0, 1), 0, 600, 4_000),
)
_TOOLS: Final = {
    "support": (
        Tool("lookup_order", 420, state_key="order_id"),
        Tool("search_kb", 900),
        Tool("issue_refund", 120, state_key="app:refunds_issued"),
    ),
    "research": (Tool("web_search", 1_100, state_key="sources_seen"), Tool("fetch_page", 2_400)),
    "coder": (
        Tool("read_file", 2_000, state_key="open_file"),
        Tool("run_tests", 500, state_key="tests_passing"),
        Tool("apply_patch", 150, args_chars=500),
    ),
    "chat": (Tool("get_weather", 200, state_key="user:city"),),
}
_COMPACTION: Final = {
    "support": CompactionConfig(compaction_interval=4, overlap_size=1),
    "research": CompactionConfig(token_threshold=6_000, event_retention_size=6),
    "coder": CompactionConfig(
        compaction_interval=6, overlap_size=1, token_threshold=8_000, event_retention_size=8
    ),
    "chat": CompactionConfig(compaction_interval=8, overlap_size=2),
}
APPS: Final = tuple(AppProfile(*row, _TOOLS[row[0]], _COMPACTION[row[0]]) for row in _ROWS)

#: Tenants of one prefix, and their weights: the first is the biggest customer.
TENANT_WEIGHTS: Final = (12, 8, 5, 3, 2, 1)


def tenant_names(prefix: str) -> tuple[str, ...]:
    """The workload's tenants under `prefix`: ``prefix0`` .. ``prefix5``."""
    return tuple(f"{prefix}{number}" for number in range(len(TENANT_WEIGHTS)))


def app_named(name: str) -> AppProfile:
    """The app called `name`.

    Raises:
        KeyError: No app of the workload has that name.
    """
    for app in APPS:
        if app.name == name:
            return app
    raise KeyError(name)


def compaction_overrides(prefixes: Iterable[str]) -> dict[str, CompactionConfig]:
    """``tenant/app`` -> the app's compaction config, for every tenant of every prefix.

    What the benchmarks give the projector (``CTXSTREAM_COMPACTION_OVERRIDES``).
    """
    return {
        f"{tenant}/{app.name}": app.compaction
        for prefix in prefixes
        for tenant in tenant_names(prefix)
        for app in APPS
    }


def view_agent_names(prefixes: Iterable[str]) -> dict[str, str]:
    """``tenant/app`` -> the app's root agent (``CTXSTREAM_VIEW_AGENT_NAMES``)."""
    return {
        f"{tenant}/{app.name}": app.agent
        for prefix in prefixes
        for tenant in tenant_names(prefix)
        for app in APPS
    }
