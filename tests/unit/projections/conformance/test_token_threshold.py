"""Which hook the token-threshold runner (``projections/conformance/token_threshold.py``) runs.

A vector names its hook; without ``hook`` the runner takes the
post-invocation hook when the vector names no agent, the pre-request check
of the named agent otherwise. The recorded vectors always name both, so these
leave them out or contradict them. The hook shows in the count read (reference
§5): after an invocation the newest count of any author, before a model call
the newest count of that agent, and the estimate of the agent's branch.

:func:`_authors` is ``token_threshold/018``'s session: ``writer`` recorded
700 prompt tokens, ``helper`` 50 after it; threshold 500, retention 1.

* the pre-request check for ``writer`` reads 700 and compacts ``e1``..``e4``
  (ADK's recorded outcome of 018), ``e5`` stays;
* the post-invocation hook reads ``helper``'s 50: nothing happens, every
  event is a candidate, retained and visible.
"""

from __future__ import annotations

from typing import Any

from projections.conformance.token_threshold import run
from tests.support.vectors import Json, text_content, vector_event

AUTHORS_CONFIG: Json = {"token_threshold": 500, "event_retention_size": 1}


def _authors() -> list[Json]:
    return [
        vector_event("e1", "inv1", "user", 100.0, text_content("user", "Write a poem")),
        vector_event(
            "e2",
            "inv1",
            "writer",
            101.0,
            text_content("model", "Draft one."),
            usageMetadata={"candidatesTokenCount": 9, "promptTokenCount": 700},
        ),
        vector_event(
            "e3",
            "inv1",
            "helper",
            102.0,
            text_content("model", "Small fix."),
            usageMetadata={"candidatesTokenCount": 9, "promptTokenCount": 50},
        ),
        vector_event("e4", "inv2", "user", 103.0, text_content("user", "question 2")),
        vector_event("e5", "inv2", "agent", 104.0, text_content("model", "answer 2")),
    ]


WRITERS_CHECK: dict[str, Any] = {
    "observed_prompt_token_count": 700,
    "triggered": True,
    "summarized_event_ids": ["e1", "e2", "e3", "e4"],
    "seed": None,
    "compaction": {"start_timestamp": 100.0, "end_timestamp": 103.0},
    "previous_compaction_end_timestamp": 0.0,
    "candidate_event_ids": ["e1", "e2", "e3", "e4", "e5"],
    "retained_event_ids": ["e5"],
    "visible_after": ["summary:NEW", "e5"],
}

AFTER_INVOCATION: dict[str, Any] = {
    "observed_prompt_token_count": 50,
    "triggered": False,
    "summarized_event_ids": [],
    "seed": None,
    "compaction": None,
    "previous_compaction_end_timestamp": 0.0,
    "candidate_event_ids": ["e1", "e2", "e3", "e4", "e5"],
    "retained_event_ids": ["e1", "e2", "e3", "e4", "e5"],
    "visible_after": ["e1", "e2", "e3", "e4", "e5"],
}


def test_a_named_agent_without_hook_gets_its_pre_request_check() -> None:
    vector = {"config": AUTHORS_CONFIG, "events": _authors(), "agent_name": "writer"}
    assert run(vector) == WRITERS_CHECK


def test_no_agent_and_no_hook_is_the_post_invocation_hook() -> None:
    assert run({"config": AUTHORS_CONFIG, "events": _authors()}) == AFTER_INVOCATION


def test_a_named_post_invocation_hook_reads_any_author_even_with_an_agent() -> None:
    vector = {
        "config": AUTHORS_CONFIG,
        "events": _authors(),
        "agent_name": "writer",
        "hook": "post_invocation",
    }
    assert run(vector) == AFTER_INVOCATION


def test_a_named_pre_request_hook_reads_the_agents_count() -> None:
    vector = {
        "config": AUTHORS_CONFIG,
        "events": _authors(),
        "agent_name": "writer",
        "hook": "pre_request",
    }
    assert run(vector) == WRITERS_CHECK


def test_the_post_invocation_hook_has_no_branch_even_when_the_vector_names_one() -> None:
    # token_threshold/021's session, with 400 characters for the sibling: the
    # hook after an invocation estimates every event, 410 // 4 = 102; the
    # check for root.right would see 10 characters (2 tokens).
    events = [
        vector_event("e1", "inv1", "user", 100.0, text_content("user", "split"), branch="root"),
        vector_event(
            "e2", "inv1", "left", 101.0, text_content("model", "s" * 400), branch="root.left"
        ),
        vector_event(
            "e3", "inv1", "right", 102.0, text_content("model", "short"), branch="root.right"
        ),
    ]
    vector = {
        "config": {"token_threshold": 1000, "event_retention_size": 0},
        "events": events,
        "current_branch": "root.right",
    }
    assert run(vector) == {
        "observed_prompt_token_count": 102,
        "triggered": False,
        "summarized_event_ids": [],
        "seed": None,
        "compaction": None,
        "previous_compaction_end_timestamp": 0.0,
        "candidate_event_ids": ["e1", "e2", "e3"],
        "retained_event_ids": ["e1", "e2", "e3"],
        "visible_after": ["e1", "e2", "e3"],
    }
    assert run({**vector, "agent_name": "right"})["observed_prompt_token_count"] == 2
