"""Where ADK's compaction hooks ran, read from a stream of events. Pure: no I/O, no clock.

ADK compacts after an invocation (token threshold, then sliding window) and
before every model call of an LLM agent (token threshold alone). A stream has
no "end of invocation" and no "model call" record, so the projector finds
each hook at the first record that shows it ran: a new invocation's first
event (:func:`completes_invocation`), an agent's tool step that the model
answers next (:func:`next_model_call`), a model response the stream has not
checked for yet (:func:`answered_model_call`). The essay is the README's
"When it compacts" (projections/README.md).

Example: ``user "q"``, ``agent`` calls ``lookup``, the tool answers: the
answer -> the check for ``agent`` before its next model call.
"""

from __future__ import annotations

from projections.compaction.token_threshold import TokenHook
from projections.event_kinds import is_rewind, is_summary
from projections.fold.projection import SessionProjection
from schemas.event import Event
from schemas.logged_event import LoggedEvent


def completes_invocation(before: SessionProjection, record: LoggedEvent) -> bool:
    """Whether `record` is the first event of a new invocation after a live one.

    Example: live ``inv1``; a raw event of ``inv2`` -> True; another event of
    ``inv1``, a summary or a rewind -> False.
    """
    event = record.envelope.event
    if is_summary(event) or is_rewind(event):
        return False
    invocation = event.invocation_id
    return (
        bool(invocation)
        and invocation not in before.log.first_positions
        and before.invocations.total > 0
    )


def next_model_call(event: Event) -> TokenHook | None:
    """The check ADK runs before the model call that follows `event`, or None if none follows.

    ADK's flow (``BaseLlmFlow.run_async``) runs another step, and so checks
    and calls the model again, after a step whose last event is not a final
    response (``Event.is_final_response``): a tool step's function
    responses, or a trailing code-execution result. So right after such an
    event of an agent, the next thing in the invocation is the pre-request
    token check of the agent that calls the model next: the event's author,
    or the agent a ``transfer_to_agent`` action hands over to. (An
    invocation aborted or cut at its model-call limit right there makes no
    call: the stream cannot know, and checks as if it did.)

    None for: the user's events (the agent that answers them is not in the
    log until it does: :func:`answered_model_call`), a summary, a rewind,
    a partial chunk, an event with function calls (the tools run next, not
    the model), a final response (``skip_summarization``, long-running tool
    ids, an error), an event that asks for a tool confirmation or
    credentials (the invocation pauses for the user), and a scoped event
    (the summary the pipeline appends carries no isolation scope, so a
    scoped hook's summary cannot be asked for).

    Example: ``agent`` answers its call ``c1`` -> the check for ``agent``;
    ``coordinator`` answers ``transfer_to_agent`` -> the check for the
    target; ``agent`` calls ``lookup`` -> None.
    """
    if (
        event.author == "user"
        or event.isolation_scope is not None
        or event.partial
        or is_summary(event)
        or is_rewind(event)
        or event.actions.skip_summarization
        or event.long_running_tool_ids
        or event.error_code
        or event.actions.requested_auth_configs
        or event.actions.requested_tool_confirmations
    ):
        return None
    parts = event.content.parts if event.content is not None else None
    if not parts or any(part.function_call is not None for part in parts):
        return None
    responds = any(part.function_response is not None for part in parts)
    trailing_result = parts[-1].code_execution_result is not None
    if not (responds or trailing_result):
        return None
    agent = event.actions.transfer_to_agent or event.author
    return TokenHook(agent_name=agent, current_branch=event.branch)


def answered_model_call(before: SessionProjection, event: Event) -> TokenHook | None:
    """The check ADK ran before the model call `event` answers, when the stream has not run it.

    A model's response (an agent's event with model content and no function
    response, or an error) follows a model call, and ADK checked the token
    threshold for that agent just before the call, on the events before the
    response. The stream evaluates that check on `before` unless it already
    did, right after the event before it (:func:`next_model_call`): so, in
    practice, for the first model call of an invocation (the user's message
    names no agent) and for an agent that starts after another one's final
    response.

    Example: ``user "q"``, then ``agent`` calls ``lookup`` -> the check for
    ``agent`` on ``[user "q"]``; the reply after the tool's response -> None
    (checked after the response).
    """
    if event.author == "user" or event.isolation_scope is not None or event.partial:
        return None
    if is_summary(event) or is_rewind(event):
        return None
    content = event.content
    model_content = content is not None and content.role == "model"
    if not (model_content or event.error_code):
        return None
    parts = content.parts if content is not None else None
    if parts and any(part.function_response is not None for part in parts):
        return None
    previous = _previous_raw_event(before)
    if previous is not None and next_model_call(previous) is not None:
        return None
    return TokenHook(agent_name=event.author, current_branch=event.branch)


def _previous_raw_event(projection: SessionProjection) -> Event | None:
    """The newest live event that is not a summary. O(summaries at the end)."""
    for record in reversed(projection.log.live):
        event = record.envelope.event
        if not is_summary(event):
            return event
    return None
