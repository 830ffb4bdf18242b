"""Sessions run through ADK's runner for the ``compaction_decisions`` kind.

A few session shapes (chat, tool use, mixed turns, large tool results,
long-running jobs, two agents, thoughts, rewinds, a coarse clock, no usage
metadata) crossed with sliding-window, token-threshold and combined configs.
Prompt-token counts are measured from each request unless a shape says
otherwise, so they fall after a compaction as a real model's do.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.recorder.decision_runner import Call, DecisionScenario, Reply, Turn

Json = dict[str, object]
TOPICS = ("tides", "glaciers", "volcanoes", "coral", "deserts", "monsoons", "aurora", "comets")
TRANSFER = Call("transfer_to_agent", {"agent_name": "researcher"})


def _ask(n: int) -> str:
    topic = TOPICS[n % len(TOPICS)]
    return f"Question {n}: what should I know about {topic}? Keep it brief but concrete."


def _answer(n: int, words: int = 18) -> str:
    topic = TOPICS[n % len(TOPICS)]
    return f"Answer {n} on {topic}: " + " ".join(f"point{k}" for k in range(words))


def chat(turns: int, tokens: int | str | None = "measured") -> tuple[Turn, ...]:
    """Text-only invocations."""
    return tuple(
        Turn(_ask(n), (Reply(text=_answer(n), tokens=tokens),)) for n in range(1, turns + 1)
    )


def fixed_chat(turns: int, step: int) -> tuple[Turn, ...]:
    """Text-only invocations whose counts grow by `step` whatever was compacted."""
    return tuple(
        Turn(_ask(n), (Reply(text=_answer(n), tokens=step * n),)) for n in range(1, turns + 1)
    )


def tools(turns: int) -> tuple[Turn, ...]:
    """Each invocation calls ``lookup`` once, then answers."""
    return tuple(
        Turn(
            _ask(n),
            (
                Reply(calls=(Call("lookup", {"query": TOPICS[n % len(TOPICS)]}),)),
                Reply(text=_answer(n, 10)),
            ),
        )
        for n in range(1, turns + 1)
    )


def mixed(turns: int) -> tuple[Turn, ...]:
    """Text turns, one-call turns, two sequential calls, parallel calls, in rotation."""
    shapes: list[Callable[[int], Turn]] = [
        lambda n: Turn(_ask(n), (Reply(text=_answer(n)),)),
        lambda n: Turn(
            _ask(n),
            (
                Reply(calls=(Call("lookup", {"query": f"q{n}"}, f"call-{n}"),)),
                Reply(text=_answer(n, 6)),
            ),
        ),
        lambda n: Turn(
            _ask(n),
            (
                Reply(text="Checking two sources.", calls=(Call("lookup", {"query": f"a{n}"}),)),
                Reply(calls=(Call("lookup", {"query": f"b{n}"}),)),
                Reply(text=_answer(n, 8)),
            ),
        ),
        lambda n: Turn(
            _ask(n),
            (
                Reply(
                    calls=(
                        Call("lookup", {"query": f"left{n}"}, f"p{n}a"),
                        Call("lookup", {"query": f"right{n}"}, f"p{n}b"),
                    )
                ),
                Reply(text=_answer(n, 4)),
            ),
        ),
    ]
    return tuple(shapes[(n - 1) % len(shapes)](n) for n in range(1, turns + 1))


def reports(turns: int) -> tuple[Turn, ...]:
    """Every other invocation fetches a large report (about 600 characters)."""
    return tuple(
        Turn(
            f"Report {n}, please.",
            (
                Reply(calls=(Call("fetch_report", {"name": f"r{n}"}),)),
                Reply(text=f"Report {n} read."),
            ),
        )
        if n % 2
        else Turn(_ask(n), (Reply(text=_answer(n, 5)),))
        for n in range(1, turns + 1)
    )


def jobs(turns: int) -> tuple[Turn, ...]:
    """Invocations that start long-running jobs (answered at once with a pending status)."""
    return tuple(
        Turn(
            f"Start job {n}.",
            (
                Reply(calls=(Call("start_job", {"task": f"t{n}"}, f"job-{n}"),)),
                Reply(text=f"Job {n} pending."),
            ),
        )
        if n % 3 == 1
        else Turn(_ask(n), (Reply(text=_answer(n, 9)),))
        for n in range(1, turns + 1)
    )


def thoughts(turns: int) -> tuple[Turn, ...]:
    """Replies with a thought part before the text."""
    return tuple(
        Turn(_ask(n), (Reply(thought=f"Plan for {n}: be brief.", text=_answer(n, 12)),))
        for n in range(1, turns + 1)
    )


def pair(turns: int) -> tuple[Turn, ...]:
    """The coordinator hands the first question to the researcher, who answers from then on."""
    first = Turn(_ask(1), (Reply(calls=(TRANSFER,)), Reply(text=_answer(1))))
    rest = tools(turns)[1:]
    return (first, *rest)


def with_rewind(turns: tuple[Turn, ...], at: int, before: int) -> tuple[Turn, ...]:
    """`turns` where turn `at` (1-based) is preceded by a rewind before invocation `before`."""
    chosen = turns[at - 1]
    rewound = Turn(chosen.user, chosen.replies, rewind_before=before)
    return (*turns[: at - 1], rewound, *turns[at:])


def sliding(interval: int, overlap: int) -> Json:
    """A sliding-window config."""
    return {"compaction_interval": interval, "overlap_size": overlap}


def token(threshold: int, retention: int) -> Json:
    """A token-threshold config."""
    return {"token_threshold": threshold, "event_retention_size": retention}


def both(interval: int, overlap: int, threshold: int, retention: int) -> Json:
    """Both pairs."""
    return {**sliding(interval, overlap), **token(threshold, retention)}


def _slug(config: Json) -> str:
    names = {
        "compaction_interval": "i",
        "overlap_size": "o",
        "token_threshold": "t",
        "event_retention_size": "r",
    }
    return "-".join(f"{names[key]}{value}" for key, value in config.items())


def _scenarios() -> list[DecisionScenario]:
    out: list[DecisionScenario] = []

    def add(
        shape: str,
        turns: tuple[Turn, ...],
        config: Json,
        what: str,
        *,
        summaries: tuple[str, ...] = (),
        clock_every: int = 1,
        agents: str = "single",
    ) -> None:
        out.append(
            DecisionScenario(
                slug=f"{shape}-{_slug(config)}",
                description=what,
                config=config,
                turns=turns,
                summaries=summaries,
                clock_every=clock_every,
                agents=agents,
            )
        )

    for interval, overlap in ((1, 0), (1, 1), (2, 0), (2, 1), (3, 1), (4, 2)):
        add(
            "chat",
            chat(8),
            sliding(interval, overlap),
            "Eight text-only invocations, sliding window.",
        )
    for interval, overlap in ((1, 0), (2, 1), (3, 0), (3, 2)):
        add("tools", tools(7), sliding(interval, overlap), "A lookup call in every invocation.")
    for interval, overlap in ((1, 0), (2, 0), (2, 1), (3, 1)):
        add(
            "mixed",
            mixed(9),
            sliding(interval, overlap),
            "Text, single, sequential and parallel calls.",
        )
    for interval, overlap in ((2, 0), (3, 1)):
        add(
            "reports",
            reports(8),
            sliding(interval, overlap),
            "Large tool results every other turn.",
        )
    for interval, overlap in ((1, 0), (2, 1)):
        add(
            "long-summaries",
            chat(8),
            sliding(interval, overlap),
            "Long summaries: the size gate refuses windows smaller than the last summary.",
            summaries=tuple(f"Summary {n}. " + "Detail. " * 60 for n in range(1, 9)),
        )
    add("jobs", jobs(7), sliding(2, 0), "Long-running jobs answered at once with a pending status.")
    add("thoughts", thoughts(6), sliding(2, 1), "Replies with thoughts.")
    add(
        "pair",
        pair(6),
        sliding(2, 0),
        "Two agents: the coordinator transfers to the researcher.",
        agents="pair",
    )
    add(
        "coarse-clock",
        mixed(8),
        sliding(2, 0),
        "A coarse clock: three readings share each timestamp.",
        clock_every=3,
    )
    add("coarse-clock", chat(8), sliding(1, 1), "A coarse clock, interval 1.", clock_every=2)
    add(
        "rewind",
        with_rewind(chat(8), at=5, before=3),
        sliding(2, 0),
        "A rewind before the third invocation, then more turns.",
    )
    add(
        "rewind",
        with_rewind(tools(7), at=6, before=5),
        sliding(3, 1),
        "A rewind of the last two invocations after two summaries.",
    )
    add("quiet", chat(6), sliding(8, 1), "Never enough invocations: no summary.")

    for threshold, retention in ((150, 0), (200, 2), (300, 3), (400, 5)):
        add(
            "chat",
            chat(9),
            token(threshold, retention),
            "Text-only chat, measured counts, token threshold.",
        )
    for threshold, retention in ((300, 2), (600, 4)):
        add(
            "fixed-counts",
            fixed_chat(7, 100),
            token(threshold, retention),
            "Counts that keep growing.",
        )
    for threshold, retention in ((150, 0), (200, 2), (300, 3), (250, 1)):
        add(
            "tools",
            tools(8),
            token(threshold, retention),
            "A lookup call in every invocation, token threshold.",
        )
    for threshold, retention in ((200, 0), (250, 2), (350, 4)):
        add("mixed", mixed(9), token(threshold, retention), "Mixed turns, token threshold.")
    for threshold, retention in ((250, 1), (400, 3)):
        add(
            "reports",
            reports(8),
            token(threshold, retention),
            "Large tool results, token threshold.",
        )
    add("jobs", jobs(7), token(200, 2), "Long-running jobs, token threshold.")
    add("thoughts", thoughts(7), token(220, 2), "Replies with thoughts, token threshold.")
    for threshold, retention in ((150, 1), (300, 2)):
        add(
            "no-usage",
            chat(7, tokens=None),
            token(threshold, retention),
            "The model reports no usage: only ADK's character estimate can trigger.",
        )
    for threshold, retention in ((200, 1), (400, 2)):
        add(
            "pair",
            pair(6),
            token(threshold, retention),
            "Two agents, token threshold.",
            agents="pair",
        )
    add(
        "coarse-clock",
        tools(7),
        token(200, 2),
        "A coarse clock with the token threshold.",
        clock_every=3,
    )
    add(
        "rewind",
        with_rewind(chat(8), at=6, before=4),
        token(200, 2),
        "A rewind with the token threshold.",
    )
    add("quiet", tools(5), token(5000, 2), "The threshold is never reached.")

    for config in (both(2, 1, 250, 2), both(3, 0, 180, 0)):
        add("chat", chat(9), config, "Both triggers on a text-only chat.")
    for config in (both(2, 0, 300, 2), both(3, 1, 200, 1)):
        add("tools", tools(8), config, "Both triggers with tool calls.")
    for config in (both(2, 1, 300, 3), both(4, 1, 220, 2)):
        add("mixed", mixed(9), config, "Both triggers on mixed turns.")
    add("reports", reports(8), both(2, 0, 400, 2), "Both triggers with large tool results.")
    add(
        "fixed-counts",
        fixed_chat(8, 60),
        both(2, 0, 300, 1),
        "Both triggers; the token pair fires from the fourth invocation on.",
    )
    # The smallest sessions that show each way the pipeline can part from ADK's runner.
    add(
        "minimal-tool-loop",
        (
            Turn(
                "Look up tides.",
                (
                    Reply(calls=(Call("lookup", {"query": "tides"}, "c1"),), tokens=1000),
                    Reply(text="Tides follow the moon.", tokens=1000),
                ),
            ),
        ),
        token(500, 0),
        "One invocation: a call reporting 1000 prompt tokens, its result, a reply.",
    )
    add(
        "minimal-no-usage",
        chat(2, tokens=None),
        token(30, 0),
        "Two invocations without usage metadata; the character estimate is over the threshold.",
    )
    add(
        "minimal-rewind-after-summary",
        with_rewind(chat(3), at=3, before=2),
        sliding(1, 0),
        "A summary after each invocation, then a rewind before the second invocation.",
    )
    return out


SCENARIOS: list[DecisionScenario] = _scenarios()
