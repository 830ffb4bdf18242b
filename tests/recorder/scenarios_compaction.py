"""Scenarios of the ``sliding_window`` and ``token_threshold`` kinds (reference §3-§6)."""

from __future__ import annotations

from tests.recorder.event_json import (
    Json,
    VectorScenario,
    call,
    chat,
    content,
    event,
    fcall,
    renumbered,
    reply,
    response,
    rewind,
    state_only,
    summary,
    thought,
    user,
)

CONFIRM = {"requestedToolConfirmations": {"t-1": {"hint": "Proceed?", "confirmed": False}}}
AUTH = {
    "requestedAuthConfigs": {
        "t-1": {"authScheme": {"type": "apiKey", "in": "header", "name": "X-Key"}}
    }
}


def sliding(
    events: list[Json],
    interval: int,
    overlap: int,
    threshold: int | None = None,
    retention: int | None = None,
) -> Json:
    """The ``input`` of a sliding_window vector (token pair only when given)."""
    config: Json = {"compaction_interval": interval, "overlap_size": overlap}
    if threshold is not None:
        config.update(token_threshold=threshold, event_retention_size=retention)
    return {"config": config, "events": renumbered(events)}


def token(
    events: list[Json],
    threshold: int,
    retention: int,
    *,
    agent: str = "",
    branch: str | None = None,
) -> Json:
    """The ``input`` of a token_threshold vector; an agent name means the pre-request hook."""
    return {
        "events": renumbered(events),
        "config": {"token_threshold": threshold, "event_retention_size": retention},
        "hook": "pre_request" if agent else "post_invocation",
        "agent_name": agent,
        "current_branch": branch,
    }


def _with_tokens(events: list[Json], tokens: int) -> list[Json]:
    """`events` whose last event reports `tokens` prompt tokens."""
    last = dict(events[-1])
    last["usageMetadata"] = {"promptTokenCount": tokens}
    return [*events[:-1], last]


def hitl_shape(first: int, invocation: str, start: float) -> list[Json]:
    """ADK's confirmation shape: a call, the confirmation request, the placeholder response."""
    return [
        user(f"e{first}", invocation, start, "Delete the old backups"),
        call(f"e{first + 1}", invocation, start + 1, "delete_backups", {"older_than": 30}, "t-1"),
        call(
            f"e{first + 2}",
            invocation,
            start + 2,
            "adk_request_confirmation",
            {"originalFunctionCall": {"id": "t-1", "name": "delete_backups"}},
            "conf-1",
            long_running=True,
        ),
        response(
            f"e{first + 3}",
            invocation,
            start + 3,
            "delete_backups",
            {"error": "This tool call requires confirmation."},
            "t-1",
            actions=CONFIRM,
        ),
    ]


_HITL_SHAPE = hitl_shape(1, "inv1", 100.0)

_HITL_RESOLVED = [
    response(
        "e5",
        "inv2",
        104.0,
        "adk_request_confirmation",
        {"confirmed": True},
        "conf-1",
        author="user",
    ),
    response("e6", "inv2", 105.0, "delete_backups", {"deleted": 12}, "t-1"),
    reply("e7", "inv2", 106.0, "Deleted twelve backups."),
    *chat(1, first=4, start=107.0),
]

SLIDING_WINDOW: list[VectorScenario] = [
    VectorScenario("empty-session", "No events at all: nothing.", sliding([], 1, 0)),
    VectorScenario(
        "below-interval", "Two invocations, interval 3: nothing.", sliding(chat(2), 3, 0)
    ),
    VectorScenario(
        "exactly-interval-first-compaction-takes-all",
        "Exactly interval new invocations trigger; the first summary covers everything.",
        sliding(chat(3), 3, 1),
    ),
    VectorScenario(
        "prior-compaction-overlap-1",
        "After a summary of inv1-2, two new invocations; overlap 1 starts the window at inv2.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "Turns 1-2."),
                *chat(2, first=3, start=104.0),
            ],
            2,
            1,
        ),
    ),
    VectorScenario(
        "prior-compaction-one-new-invocation",
        "Only one invocation after the summary, interval 2: nothing.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "Turns 1-2."),
                *chat(1, first=3, start=104.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "overlap-reaches-first-invocation",
        "Overlap beyond the history clamps to the first invocation; the old summary is subsumed.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "Turns 1-2."),
                *chat(2, first=3, start=104.0),
            ],
            2,
            5,
        ),
    ),
    VectorScenario(
        "long-running-pending-blocks",
        "A pending long-running call stops the window before it.",
        sliding(
            [
                *chat(1),
                user("e3", "inv2", 102.0, "Start the export"),
                call("e4", "inv2", 103.0, "export", {}, "lr-1", long_running=True),
                *chat(1, first=3, start=104.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "plain-call-open-in-newest-invocation",
        "An unanswered call in the newest invocation may still run: the window stops before it.",
        sliding(
            [
                *chat(2),
                user("e5", "inv3", 104.0, "Look it up"),
                call("e6", "inv3", 105.0, "lookup", {"q": "x"}, "c-9"),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "hitl-confirmation-pending",
        "The real confirmation shape (call, request, placeholder) in the newest invocation blocks.",
        sliding([*chat(1), *hitl_shape(3, "inv2", 102.0)], 2, 0),
    ),
    VectorScenario(
        "hitl-confirmation-in-older-invocation-is-dead",
        "The same shape left unanswered in an older invocation is not protected: all compacts.",
        sliding([*_HITL_SHAPE, *chat(1, first=2, start=104.0)], 2, 0),
    ),
    VectorScenario(
        "hitl-confirmation-resolved",
        "Once the confirmation and the tool are answered the whole window compacts.",
        sliding([*_HITL_SHAPE, *_HITL_RESOLVED], 2, 0),
    ),
    VectorScenario(
        "auth-request-pending",
        "An open credential request in the newest invocation blocks like a pending call.",
        sliding(
            [
                *chat(1),
                user("e3", "inv2", 102.0, "Sync my calendar"),
                call("e4", "inv2", 103.0, "sync", {}, "t-1"),
                response("e5", "inv2", 104.0, "sync", {"error": "needs auth"}, "t-1", actions=AUTH),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "dead-call-after-user-message",
        "An unanswerable call after an older invocation's first event is dead: the window goes on.",
        sliding(
            [
                user("e1", "inv1", 100.0, "Check the stock"),
                call("e2", "inv1", 101.0, "stock", {"sku": 4}, "dead-1"),
                *chat(2, first=2, start=102.0),
            ],
            3,
            0,
        ),
    ),
    VectorScenario(
        "dead-call-opening-invocation-blocks",
        "A dead call that opens an older invocation stops the window at that invocation boundary.",
        sliding(
            [
                *chat(1),
                call("e3", "inv2", 102.0, "stock", {"sku": 4}, "dead-2"),
                reply("e4", "inv2", 103.0, "Stock unknown."),
                *chat(1, first=3, start=104.0),
            ],
            3,
            0,
        ),
    ),
    VectorScenario(
        "rewound-invocations-excluded",
        "Rewound invocations neither count nor enter the window.",
        sliding([*chat(3), rewind("e7", 106.0, "inv2"), *chat(2, first=4, start=107.0)], 3, 0),
    ),
    VectorScenario(
        "rewound-invocations-not-enough",
        "After a rewind too few live invocations remain: nothing.",
        sliding([*chat(3), rewind("e7", 106.0, "inv2"), *chat(1, first=4, start=107.0)], 3, 0),
    ),
    VectorScenario(
        "compaction-end-zero-ignored",
        "A summary ending at 0.0 is skipped when finding the previous end.",
        sliding([*chat(2), summary("e5", 104.0, 0.0, 0.0, "Nothing.")], 2, 0),
    ),
    VectorScenario(
        "previous-end-is-most-recent-not-widest",
        "The previous end is the most recently appended summary's, not the widest one's.",
        sliding(
            [
                *chat(3),
                summary("e7", 106.0, 100.0, 105.0, "Turns 1-3."),
                summary("e8", 106.5, 100.0, 101.0, "Turn 1 again."),
                *chat(1, first=4, start=107.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "interleaved-old-invocation-late-event",
        "A late event makes an old invocation new again; the window starts at its first event.",
        sliding(
            [
                *chat(2),
                summary("e5", 104.0, 100.0, 103.0, "Turns 1-2."),
                reply("e6", "inv1", 105.0, "a late remark on turn 1"),
                *chat(1, first=3, start=106.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "invocation-at-zero-never-new",
        "An invocation whose latest timestamp is 0.0 never counts as new.",
        sliding([user("e1", "inv1", 0.0, "time zero"), *chat(1, first=2, start=102.0)], 2, 0),
    ),
    VectorScenario(
        "events-without-invocation-id-included",
        "Events without an invocation id inside the range are summarized too.",
        sliding(
            [
                *chat(1),
                reply("e3", "", 102.0, "a note without invocation"),
                *chat(1, first=2, start=103.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "scoped-events-ignored",
        "Events with an isolation scope are neither counted nor summarized.",
        sliding(
            [
                *chat(1),
                user("e3", "inv2", 102.0, "scoped question", isolationScope="task-7"),
                reply("e4", "inv2", 103.0, "scoped answer", isolationScope="task-7"),
                *chat(1, first=3, start=104.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "state-only-range-not-worth",
        "A range made only of content-less events cannot shrink the request: no summary.",
        sliding(
            [state_only("e1", "inv1", 100.0, step=1), state_only("e2", "inv2", 101.0, step=2)], 2, 0
        ),
    ),
    VectorScenario(
        "gate-refuses-range-smaller-than-previous-summary",
        "With a long previous summary a small new range is not worth summarizing.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "A very long summary. " * 20),
                *chat(2, first=3, start=104.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "gate-passes-once-range-grows",
        "The same long summary, but the new range holds a large tool result: it passes.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "A very long summary. " * 20),
                user("e6", "inv3", 104.0, "Fetch the report"),
                call("e7", "inv3", 105.0, "report", {"id": 7}, "rp-1"),
                response(
                    "e8", "inv3", 106.0, "report", {"text": "line of the report " * 40}, "rp-1"
                ),
                *chat(1, first=4, start=107.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "out-of-order-timestamps",
        "Stream order and timestamp order disagree: the range comes from window positions.",
        sliding(
            [
                user("e1", "inv1", 104.0, "first by stream"),
                reply("e2", "inv1", 105.0, "reply one"),
                user("e3", "inv2", 100.0, "earlier stamp"),
                reply("e4", "inv2", 101.0, "reply two"),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "chain-of-compactions",
        "Two summaries already present; a third window with overlap 1.",
        sliding(
            [
                *chat(2),
                summary("e5", 103.5, 100.0, 103.0, "Turns 1-2."),
                *chat(2, first=3, start=104.0),
                summary("e10", 107.5, 102.0, 107.0, "Turns 2-4."),
                *chat(2, first=5, start=108.0),
            ],
            2,
            1,
        ),
    ),
    VectorScenario(
        "hitl-request-at-start-blocks-all",
        "A confirmation request as the first window event, without its call, blocks everything.",
        sliding(
            [
                response(
                    "e1",
                    "inv1",
                    100.0,
                    "delete_backups",
                    {"error": "confirm first"},
                    "t-1",
                    actions=CONFIRM,
                ),
                *chat(2, first=2, start=101.0),
            ],
            2,
            0,
        ),
    ),
    VectorScenario(
        "precedence-token-first",
        "Both pairs configured and the token count is over the threshold: the token summary wins.",
        sliding(_with_tokens(chat(3), 900), 2, 0, threshold=500, retention=2),
    ),
    VectorScenario(
        "precedence-token-below-sliding-fires",
        "Token count below the threshold: the sliding window decides.",
        sliding(_with_tokens(chat(3), 100), 2, 0, threshold=500, retention=2),
    ),
    VectorScenario(
        "precedence-token-estimate-read",
        "No usage recorded: the token trigger reads the character estimate, then the window runs.",
        sliding(chat(3), 3, 0, threshold=1000, retention=1),
    ),
    VectorScenario(
        "precedence-both-with-empty-session",
        "No events: neither trigger reads anything.",
        sliding([], 1, 0, threshold=10, retention=0),
    ),
]

_NESTED_SUMMARIES = [
    *chat(3),
    summary("e7", 106.0, 100.0, 101.0, "Turn 1."),
    summary("e8", 107.0, 100.0, 103.0, "Turns 1-2."),
    *chat(3, first=5, start=108.0),
]

TOKEN_THRESHOLD: list[VectorScenario] = [
    VectorScenario(
        "below-threshold", "Count 499 < threshold 500.", token(_with_tokens(chat(3), 499), 500, 1)
    ),
    VectorScenario(
        "equal-threshold-triggers",
        "Count equal to the threshold compacts.",
        token(_with_tokens(chat(3), 500), 500, 1),
    ),
    VectorScenario(
        "retention-zero-compacts-all",
        "Retention 0 compacts every candidate.",
        token(_with_tokens(chat(3), 800), 500, 0),
    ),
    VectorScenario(
        "retention-keeps-tail",
        "Retention 3 keeps the three newest events.",
        token(_with_tokens(chat(4), 800), 500, 3),
    ),
    VectorScenario(
        "retention-covers-all-candidates",
        "As many candidates as retained events: nothing.",
        token(_with_tokens(chat(2), 800), 500, 4),
    ),
    VectorScenario(
        "split-with-parallel-responses",
        "Parallel calls answered in separate events; retention 1 moves the split before the call.",
        token(
            _with_tokens(
                [
                    *chat(1),
                    user("e3", "inv2", 102.0, "Both cities"),
                    event(
                        "e4",
                        "inv2",
                        "agent",
                        103.0,
                        content(
                            "model", fcall("w", {"c": "a"}, "pa"), fcall("w", {"c": "b"}, "pb")
                        ),
                    ),
                    response("e5", "inv2", 104.0, "w", {"t": 1}, "pa"),
                    response("e6", "inv2", 105.0, "w", {"t": 2}, "pb"),
                ],
                800,
            ),
            500,
            1,
        ),
    ),
    VectorScenario(
        "retained-response-pulls-its-call",
        "A retained response would lose its call: the call is retained too.",
        token(
            _with_tokens(
                [
                    *chat(2),
                    call("e5", "inv3", 104.0, "lookup", {"q": "z"}, "k1"),
                    response("e6", "inv3", 105.0, "lookup", {"a": 1}, "k1"),
                ],
                800,
            ),
            500,
            1,
        ),
    ),
    VectorScenario(
        "rolling-seed-from-previous-summary",
        "A previous summary is seeded first at its start timestamp; the new one contains it.",
        token(
            _with_tokens(
                [
                    *chat(2),
                    summary("e5", 103.5, 100.0, 103.0, "Turns 1-2."),
                    *chat(3, first=3, start=104.0),
                ],
                900,
            ),
            500,
            2,
        ),
    ),
    VectorScenario(
        "subsumed-summaries-ignored-for-seed",
        "Of nested summaries the containing one seeds, and events after its end are candidates.",
        token(_with_tokens(_NESTED_SUMMARIES, 900), 500, 2),
    ),
    VectorScenario(
        "older-summary-covered-events-are-candidates",
        "Events an older, non-latest summary covered are candidates again after the latest's end.",
        token(
            _with_tokens(
                [
                    *chat(3),
                    summary("e7", 106.0, 102.0, 105.0, "Turns 2-3."),
                    summary("e8", 107.0, 100.0, 101.0, "Turn 1."),
                    *chat(1, first=5, start=108.0),
                ],
                900,
            ),
            500,
            1,
        ),
    ),
    VectorScenario(
        "counts-before-summary-ignored",
        "The only count is older than the summary: the estimate decides (below).",
        token(
            [
                *_with_tokens(chat(2), 5000),
                summary("e5", 103.5, 100.0, 101.0, "Turn 1."),
                *chat(1, first=3, start=104.0),
            ],
            500,
            0,
        ),
    ),
    VectorScenario(
        "counts-before-summary-estimate-above",
        "The only count predates the summary; the estimate of long texts is over the threshold.",
        token(
            [
                *_with_tokens(chat(1), 5000),
                summary("e3", 101.5, 100.0, 100.0, "Turn 1 question."),
                user("e4", "inv2", 102.0, "a long question " * 30),
                reply("e5", "inv2", 103.0, "a long answer " * 30),
            ],
            100,
            0,
        ),
    ),
    VectorScenario(
        "cold-start-estimate-above",
        "No usage anywhere: chars/4 of the request is over the threshold.",
        token(
            [
                user("e1", "inv1", 100.0, "x" * 400),
                reply("e2", "inv1", 101.0, "y" * 400),
                *chat(1, first=2, start=102.0),
            ],
            150,
            1,
        ),
    ),
    VectorScenario(
        "cold-start-estimate-below",
        "No usage anywhere: the estimate is below the threshold.",
        token(chat(2), 150, 1),
    ),
    VectorScenario(
        "cold-start-nothing-countable",
        "No usage and no characters to count: no count at all.",
        token([state_only("e1", "inv1", 100.0, a=1), state_only("e2", "inv2", 101.0, b=2)], 1, 0),
    ),
    VectorScenario(
        "estimate-counts-tool-payloads",
        "The estimate counts call names and JSON of arguments and responses.",
        token(
            [
                user("e1", "inv1", 100.0, "go"),
                call("e2", "inv1", 101.0, "fetch", {"url": "u" * 200}, "f1"),
                response("e3", "inv1", 102.0, "fetch", {"body": "b" * 300}, "f1"),
                *chat(1, first=2, start=103.0),
            ],
            130,
            1,
        ),
    ),
    VectorScenario(
        "estimate-skips-thought-only-events",
        "Thought-only events are not in the request, so not in the estimate.",
        token(
            [
                user("e1", "inv1", 100.0, "hi"),
                event("e2", "inv1", "agent", 101.0, content("model", thought("t" * 800))),
                *chat(1, first=2, start=102.0),
            ],
            100,
            0,
        ),
    ),
    VectorScenario(
        "pre-request-agent-filter",
        "Pre-request hook for 'writer': a later count by 'helper' is ignored.",
        token(
            [
                user("e1", "inv1", 100.0, "Write a poem"),
                reply("e2", "inv1", 101.0, "Draft one.", author="writer", tokens=700),
                reply("e3", "inv1", 102.0, "Small fix.", author="helper", tokens=50),
                *chat(1, first=2, start=103.0),
            ],
            500,
            1,
            agent="writer",
        ),
    ),
    VectorScenario(
        "pre-request-other-agent-count-only",
        "Pre-request hook for 'writer' with only another agent's count: the estimate decides.",
        token(
            [
                user("e1", "inv1", 100.0, "Write a poem"),
                reply("e2", "inv1", 101.0, "Draft one.", author="helper", tokens=700),
            ],
            500,
            0,
            agent="writer",
        ),
    ),
    VectorScenario(
        "post-invocation-reads-any-author",
        "Without an agent name the latest count of any agent is read.",
        token(
            [
                user("e1", "inv1", 100.0, "Write a poem"),
                reply("e2", "inv1", 101.0, "Draft one.", author="writer", tokens=50),
                reply("e3", "inv1", 102.0, "Small fix.", author="helper", tokens=700),
                *chat(1, first=2, start=103.0),
            ],
            500,
            1,
        ),
    ),
    VectorScenario(
        "branch-limits-estimate",
        "The pre-request estimate for a child branch leaves out its sibling's text.",
        token(
            [
                user("e1", "inv1", 100.0, "split", branch="root"),
                reply("e2", "inv1", 101.0, "s" * 600, author="left", branch="root.left"),
                reply("e3", "inv1", 102.0, "short", author="right", branch="root.right"),
            ],
            100,
            0,
            agent="right",
            branch="root.right",
        ),
    ),
    VectorScenario(
        "other-agent-preamble-inflates-estimate",
        "Each foreign event carries the long preamble, which the estimate counts.",
        token(
            [
                user("e1", "inv1", 100.0, "hi"),
                reply("e2", "inv1", 101.0, "a", author="other"),
                reply("e3", "inv1", 102.0, "b", author="other"),
                reply("e4", "inv1", 103.0, "c", author="other"),
            ],
            250,
            1,
            agent="me",
        ),
    ),
    VectorScenario(
        "pending-call-excluded",
        "An unanswered call of the newest invocation stops the compacted prefix.",
        token(
            _with_tokens(
                [
                    *chat(2),
                    user("e5", "inv3", 104.0, "look"),
                    call("e6", "inv3", 105.0, "lookup", {}, "k9"),
                    reply("e7", "inv3", 106.0, "waiting"),
                ],
                900,
            ),
            500,
            0,
        ),
    ),
    VectorScenario(
        "long-running-pending-protected",
        "A pending long-running call, even in an older invocation, is never compacted past.",
        token(
            _with_tokens(
                [
                    user("e1", "inv1", 100.0, "start job"),
                    call("e2", "inv1", 101.0, "job", {}, "lr-5", long_running=True),
                    *chat(2, first=2, start=102.0),
                ],
                900,
            ),
            500,
            0,
        ),
    ),
    VectorScenario(
        "confirmation-pending-in-newest-invocation",
        "An unanswered confirmation request of the newest invocation stops the prefix.",
        token(_with_tokens([*chat(1), *hitl_shape(3, "inv2", 102.0)], 900), 500, 0),
    ),
    VectorScenario(
        "confirmation-pending-in-older-invocation-is-dead",
        "An unanswered confirmation of an older invocation is not protected: the prefix goes on.",
        token(_with_tokens([*_HITL_SHAPE, *chat(1, first=3, start=104.0)], 900), 500, 0),
    ),
    VectorScenario(
        "worth-gate-passes-when-seed-subsumes-previous",
        "A long previous summary does not block: the new range starts at the seed and removes it.",
        token(
            _with_tokens(
                [
                    *chat(1),
                    summary("e3", 101.5, 100.0, 101.0, "Long summary. " * 40),
                    *chat(2, first=2, start=102.0),
                ],
                900,
            ),
            500,
            1,
        ),
    ),
    VectorScenario(
        "worth-gate-refuses-contentless-window",
        "A window of content-less events is not worth summarizing.",
        token(
            [
                state_only("e1", "inv1", 100.0, a=1),
                state_only("e2", "inv1", 101.0, b=2),
                reply("e3", "inv2", 102.0, "", tokens=900),
                user("e4", "inv2", 103.0, "tail"),
            ],
            500,
            2,
        ),
    ),
    VectorScenario(
        "rewound-events-excluded",
        "Rewound events neither count nor are summarized.",
        token(
            _with_tokens(
                [*chat(3), rewind("e7", 106.0, "inv2"), *chat(2, first=4, start=107.0)], 900
            ),
            500,
            1,
        ),
    ),
    VectorScenario(
        "dead-call-without-invocation-ids",
        "No event has an invocation id, so an unanswered call is dead and does not block.",
        token(
            [
                user("e1", "", 100.0, "question"),
                call("e2", "", 101.0, "crashy", {}, "c1"),
                reply("e3", "", 102.0, "answer", tokens=100),
            ],
            50,
            0,
        ),
    ),
    VectorScenario(
        "scoped-summary-does-not-seed",
        "Post-invocation: a summary of another isolation scope is neither the latest nor the seed.",
        token(
            _with_tokens(
                [
                    *chat(2),
                    summary("e5", 103.5, 100.0, 103.0, "Scoped summary.", isolationScope="task-2"),
                    *chat(1, first=3, start=104.0),
                ],
                900,
            ),
            500,
            1,
        ),
    ),
]
