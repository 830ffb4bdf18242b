"""Regression cases found by differential testing of compaction against ADK 2.13.0.

Each case is vector-shaped (``kind`` + ``input`` as in ``tests/conformance/vectors``)
and its ``expected`` value is what ADK 2.13.0 produced for that input when run
locally (recorded data, like the shared vectors). The core must reproduce it
through :func:`projections.conformance.actual_for`.
"""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.unit.vector_json import Json, text_content, vector_event

# No event has an invocation id, so there is no newest invocation: the
# unanswered call is not protected as "possibly still running" and is proven
# dead, so the whole window is compacted (not just the user message before it).
_NO_INVOCATION_IDS = [
    vector_event("e1", "", "user", 100.0, text_content("user", "question")),
    vector_event(
        "e2",
        "",
        "agent",
        101.0,
        {"parts": [{"functionCall": {"id": "c1", "name": "crashy", "args": {}}}], "role": "model"},
    ),
    vector_event(
        "e3",
        "",
        "agent",
        102.0,
        text_content("model", "answer"),
        usageMetadata={"promptTokenCount": 100},
    ),
]

CASES: list[tuple[str, str, Json, Json]] = [
    (
        "token-threshold-dead-call-without-invocation-ids",
        "token_threshold",
        {
            "events": _NO_INVOCATION_IDS,
            "config": {"token_threshold": 50, "event_retention_size": 0},
            "hook": "post_invocation",
            "agent_name": "",
            "current_branch": None,
        },
        {
            "observed_prompt_token_count": 100,
            "triggered": True,
            "summarized_event_ids": ["e1", "e2", "e3"],
            "seed": None,
            "compaction": {"start_timestamp": 100.0, "end_timestamp": 102.0},
            "previous_compaction_end_timestamp": 0.0,
            "candidate_event_ids": ["e1", "e2", "e3"],
            "retained_event_ids": [],
            "visible_after": ["summary:NEW"],
        },
    ),
    (
        "post-invocation-hook-dead-call-without-invocation-ids",
        "sliding_window",
        {
            "events": _NO_INVOCATION_IDS,
            "config": {
                "compaction_interval": 1,
                "overlap_size": 0,
                "token_threshold": 50,
                "event_retention_size": 0,
            },
        },
        {
            "trigger": "token_threshold",
            "summarized_event_ids": ["e1", "e2", "e3"],
            "seed": None,
            "compaction": {"start_timestamp": 100.0, "end_timestamp": 102.0},
            "token_observed_prompt_token_count": 100,
        },
    ),
    (
        # ADK's masking function orders by timestamp even without any summary.
        "visible-after-sorted-without-summary",
        "token_threshold",
        {
            "events": [
                vector_event("e1", "inv1", "user", 101.0, text_content("user", "first")),
                vector_event("e2", "inv1", "agent", 100.0, text_content("model", "second")),
                vector_event("e3", "inv2", "user", 102.0, text_content("user", "third")),
            ],
            "config": {"token_threshold": 1000, "event_retention_size": 1},
            "hook": "post_invocation",
            "agent_name": "",
            "current_branch": None,
        },
        {
            "observed_prompt_token_count": 4,
            "triggered": False,
            "summarized_event_ids": [],
            "seed": None,
            "compaction": None,
            "previous_compaction_end_timestamp": 0.0,
            "candidate_event_ids": ["e1", "e2", "e3"],
            "retained_event_ids": ["e1", "e2", "e3"],
            "visible_after": ["e2", "e1", "e3"],
        },
    ),
]


@pytest.mark.parametrize(
    ("kind", "vector_input", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_matches_adk(kind: str, vector_input: Json, expected: Json) -> None:
    assert actual_for({"kind": kind, "input": vector_input}) == expected
