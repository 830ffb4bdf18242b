"""Assemble the contents of a model request from a session (reference §8, §9). Pure.

:func:`build_contents` is a pipeline of named steps, one per step of the
reference, each in its own module: rewinds (§8.1), inclusion (§8.2), masking
(§8.3), compacted calls (§8.4), transcriptions (§8.5), other agents (§8.6),
call pairing (§8.7), the request copy (§8.8), scoped agents (§8.9) and the
current turn (§9). The table of steps, modules and the context each reads:
projections/README.md, "Contents assembly".

Example: ``user "q"``, ``agent`` calls ``lookup``, the tool answers, for
``agent`` -> ``[user "q", model call, user response]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import assert_never

from projections.compaction.masking import mask_compacted
from projections.contents.call_pairing import pair_calls_with_responses
from projections.contents.compacted_calls import recover_compacted_calls
from projections.contents.contents_request import ContentsRequest
from projections.contents.current_turn import find_turn_start
from projections.contents.other_agents import quote_other_agents
from projections.contents.request_contents import task_input_content, to_request_contents
from projections.contents.transcriptions import merge_transcriptions
from projections.contents.visibility import is_included, recorded_call_ids
from projections.event_kinds import is_summary
from projections.fold.rewind import drop_rewound
from schemas.event import Content, Event

__all__ = ["ContentsRequest", "assemble_included", "build_contents", "paired_included"]


def build_contents(events: Sequence[Event], request: ContentsRequest) -> list[Content]:
    """The contents ADK would put in a model request for `request.agent_name`.

    Args:
        events: The whole session, stream order (rewinds and summaries included).
        request: Agent, branch, scope and options.

    Returns:
        The request contents, before instructions or memory are inserted.
    """
    match request.include_contents:
        case "default":
            return _history_contents(events, request)
        case "none":
            return _current_turn_contents(events, request)
        case _:
            assert_never(request.include_contents)


def _history_contents(events: Sequence[Event], request: ContentsRequest) -> list[Content]:
    """Default mode (§8): every visible event of the session."""
    live = drop_rewound(events)
    call_ids = recorded_call_ids(live)
    visible = [event for event in live if is_included(event, request, call_ids)]
    return assemble_included(visible, request, events)


def assemble_included(
    visible: Sequence[Event], request: ContentsRequest, events: Sequence[Event]
) -> list[Content]:
    """Default mode from masking on (§8.3-§8.9), for events that passed rewinds and inclusion.

    Args:
        visible: What §8.1 and §8.2 leave of `events`, stream order.
        request: Agent, branch, scope and options.
        events: What the assembly was given (a scoped agent's task is read from it).
    """
    contents = to_request_contents(
        paired_included(visible, request),
        preserve_function_call_ids=request.preserve_function_call_ids,
    )
    if request.isolation_scope is not None:  # §8.9: a scoped agent's task goes first
        task = task_input_content(events, request.isolation_scope)
        if task is not None:
            contents.insert(0, task)
    return contents


def paired_included(visible: Sequence[Event], request: ContentsRequest) -> list[Event]:
    """§8.3-§8.7 of the default mode: the events whose contents the request copies, in order.

    Each event is either one of `visible` itself or a new object (a quoted
    other agent, a merged transcription, a call or response regrouped), so an
    event that comes out as it went in has the request content it had last time.
    """
    if any(is_summary(event) for event in visible):
        # Masking deliberately re-sorts everything by timestamp (ADK quirk, §14.1).
        masked = mask_compacted(visible, request.agent_name)
        visible = recover_compacted_calls(masked, visible)
    visible = merge_transcriptions(visible)
    visible = quote_other_agents(
        visible,
        request.agent_name,
        include_thoughts=request.include_thoughts_from_other_agents,
    )
    return pair_calls_with_responses(visible)


def _current_turn_contents(events: Sequence[Event], request: ContentsRequest) -> list[Content]:
    """``none`` mode (§9): the default assembly of the slice from the turn start.

    ADK never passes the thoughts flag in this mode, for the search or the
    assembly; the turn start is searched before rewinds are applied.
    """
    request = dataclasses.replace(request, include_thoughts_from_other_agents=False)
    start = find_turn_start(events, request)
    if start is None:
        return []
    return _history_contents(events[start:], request)
