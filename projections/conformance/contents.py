"""Replay ``contents`` vectors: request contents for one agent (reference §8, §9). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.contents.assembly import ContentsRequest, build_contents
from schemas.event import Event, content_to_json


def run(vector_input: Mapping[str, Any]) -> dict[str, Any]:
    """The ``expected`` of a contents vector: ``{"contents": [...]}`` as genai JSON."""
    events = [Event.model_validate(event) for event in vector_input["events"]]
    request = ContentsRequest(
        agent_name=vector_input.get("agent_name") or "",
        current_branch=vector_input.get("current_branch"),
        include_contents=vector_input.get("include_contents", "default"),
        preserve_function_call_ids=bool(vector_input.get("preserve_function_call_ids")),
        include_thoughts_from_other_agents=bool(
            vector_input.get("include_thoughts_from_other_agents")
        ),
        isolation_scope=vector_input.get("isolation_scope"),
    )
    return {"contents": [content_to_json(c) for c in build_contents(events, request)]}
