"""When the projector asks for a compaction, and which request it emits. Pure: no I/O, no clock.

ADK compacts at two hooks (reference §5.1, §6): the runner's post-invocation
hook, after an invocation's last event (token threshold first, then the
sliding window), and the pre-request token check, before every model call
of an LLM agent (the token threshold alone, reading only that agent's
recorded counts). A stream has no "end of invocation" and no "model call"
record, so the projector evaluates each hook while folding the first record
that shows it ran, on the very events ADK's hook saw:

* **an invocation has completed** when the first event of a *new*
  invocation arrives: a raw event (neither a summary nor a rewind) whose
  non-empty ``invocation_id`` no earlier record of the session carried,
  after at least one live invocation. The post-invocation hook
  (:func:`~projections.compaction.after_invocation.select_post_invocation_window`) is
  evaluated on the projection *before* that event;
* **a model call follows** a tool step: after an agent's event that ADK's
  flow does not treat as a final response and that calls no tool (a tool's
  function responses, a trailing code-execution result), ADK calls the model
  again, so the check for the agent that calls it (the author, or the
  target of ``transfer_to_agent``) is evaluated on the projection *after*
  that event (:func:`next_model_call`). This is where ADK checks in a tool
  loop: after the tool responses, with the count of the response that
  called the tools;
* **a model call was answered** that the stream has not checked for yet:
  the first model response of an invocation (the user's message does not
  say which agent answers it) or of an agent that starts after another
  one's final reply. The check for the responding agent is evaluated on the
  projection *before* the response (:func:`answered_model_call`).

The token trigger reads the newest recorded prompt-token count since the
newest summary event and, when there is none, ADK's characters/4 estimate of
the request contents (reference §3.6, :mod:`projections.compaction.token_count`), so a
session whose model calls report no usage is compacted by tokens too.

The selection reads a tail of the live list, not the session: in a live
list in order (rising timestamps, contiguous invocations, the pipeline's
own summaries; :mod:`projections.compaction.live_order`) the events from
:func:`~projections.compaction.decision_window.decision_start` on choose the very
window the whole list would, so a decision costs what the events since the
newest summary cost. Out of order, or when the token trigger must estimate
for another request than the view's, it reads the whole live list, as
``use_memo=False`` always does.

Cheap pre-checks keep the selection off the hot path: the
post-invocation hook runs only when ``invocations.since_compaction`` has
reached ``compaction_interval``, or the last recorded prompt-token count has
reached ``token_threshold`` or none was recorded since the newest summary;
a pre-request check reads its agent's recorded count walking back from the
newest event (a few events: a tool's response follows the call that
reported it) and selects only at the threshold or without a count.

An armed trigger whose windows are not worth compacting stays armed, and
ADK selects again at every hook. The projector remembers why nothing can
pass the size gate (:mod:`projections.compaction.gate_memo`) and skips the selection
while that stays true, so an armed but quiet trigger costs O(1) per event;
the same O(1) facts skip a trigger whose own count says it cannot fire
(``since_compaction`` below the interval, a recorded prompt-token count
below the threshold). The decisions are exactly those of the plain
selection: ``use_memo=False`` runs it alone, and a property test holds the
two equal. Without a recorded count, a token check that the memo does not
answer estimates from the view's contents when the view serves the check's
request (the post-invocation hook's, with the default view): O(visible
context), which compaction bounds; for another agent, branch or scope it
assembles the contents from the whole live list (O(history)).

Never two in flight: nothing is decided while the projection waits on a
request. A request whose id a live summary already answers, or that a
refusal named, is not emitted again; a refusal is not itself a trigger. The
request id is
:func:`~schemas.compaction_request.compaction_request_id` of the session,
the trigger and the window's offsets, so the same log always yields the same
requests: :func:`replay_decisions` is what the projector must emit for a log.

**What a stream cannot reproduce.** ADK appends a summary synchronously,
before the next event; the pipeline appends it after the record that
decided it, and later still in production. Three consequences, each checked
against ADK 2.13.0's runner by the ``compaction_decisions`` vectors:

* a post-invocation summary lands after the next invocation's first event,
  so a rewind to that invocation removes it where ADK's survives; and ADK's
  summary of the invocation just before a rewind (its hook ran before the
  rewind was appended) would be decided by the rewind record itself and
  land after the rewind that removes its events. A rewind record therefore
  completes no invocation here: the summary would stay live and bring the
  rewound conversation back into the context. Reproducing ADK needs the
  fold to place each summary where its decision was taken, which no record
  carries;
* when the check before an invocation's first model call compacts, the
  summary lands after the model's response, so that response's own count
  (ADK's count of the compacted prompt) is behind the summary and the next
  check reads the estimate;
* scoped invocations are not checked before their model calls: the summary
  the pipeline appends carries no isolation scope.

Example, ``compaction_interval=2, overlap_size=0``: inv1 (offsets 0, 1),
inv2 (2, 3); the first event of inv3 (offset 4) completes inv2 and decides
``sliding_window`` over offsets 0..3, ``decided_at_offset=4``. Example,
``token_threshold=500, event_retention_size=0``: ``user`` (0), the agent's
call reporting 1,000 prompt tokens (1), the tool's response (2): folding
the response decides ``token_threshold`` over offsets 0..2 before the agent's
next model call, ``decided_at_offset=2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.decision_window import decision_start
from projections.compaction.gate_memo import gate_memo
from projections.compaction.masking import is_summary
from projections.compaction.rolling_seed import carried_seed
from projections.compaction.summary_request import refused_request_id
from projections.compaction.token_count import content_characters, newest_recorded_count
from projections.compaction.token_threshold import (
    POST_INVOCATION,
    ObservedCount,
    TokenHook,
    select_token_threshold_window,
)
from projections.compaction.window import CompactionWindow
from projections.contents.contents_request import ContentsRequest
from projections.fold.projection import (
    SessionProjection,
    apply,
    context_contents,
    live_event_sizes,
    live_events,
    note_request,
)
from schemas.codec import MAX_RECORD_BYTES, encode
from schemas.compaction_request import (
    CompactionRequest,
    InheritedEvent,
    compaction_request_id,
    seed_problem,
)
from schemas.event import Event
from schemas.keys import Offset, SessionKey, parse_session_key
from schemas.logged_event import LoggedEvent

SEED_INVOCATION_ID: Final = "ctxstream-seed"
"""Invocation id of the synthetic seed event; the request carries the seed without it."""


def completes_invocation(before: SessionProjection, record: LoggedEvent) -> bool:
    """Whether `record` is the first event of a new invocation after a live one.

    Example: live ``inv1``; a raw event of ``inv2`` -> True; another event of
    ``inv1``, a summary or a rewind -> False.
    """
    event = record.envelope.event
    if is_summary(event) or event.actions.rewind_before_invocation_id:
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
        or event.actions.rewind_before_invocation_id
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
    if is_summary(event) or event.actions.rewind_before_invocation_id:
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


def _hook_may_fire(before: SessionProjection, config: CompactionConfig) -> bool:
    """The pre-check of the post-invocation hook: O(1).

    The token trigger may fire when the count it reads is at the threshold,
    or when no count was recorded since the newest summary (it then reads
    the characters/4 estimate, reference §3.6).
    """
    interval, threshold = config.compaction_interval, config.token_threshold
    sliding = (
        config.has_sliding_window
        and interval is not None
        and before.invocations.since_compaction >= interval
    )
    last = before.tokens.last_prompt_tokens
    token = (
        config.has_token_threshold and threshold is not None and (last is None or last >= threshold)
    )
    return sliding or token


def decide_compaction(
    before: SessionProjection,
    after: SessionProjection,
    record: LoggedEvent,
    config: CompactionConfig,
    *,
    use_memo: bool = True,
) -> CompactionRequest | None:
    """The request the projector emits after applying `record`, or None.

    Args:
        before: The projection before `record`.
        after: ``apply(before, record)``.
        record: The event just applied.
        config: The compaction config of the session's app.
        use_memo: Skip selections that :func:`_quiet_after_invocation` and
            :func:`_quiet_token_check` prove empty; False runs every selection
            (the plain rule the memo must agree with).
    """
    return _decide(before, after, record, config, use_memo=use_memo).request


@dataclass(frozen=True, slots=True)
class _Decision:
    """A decision, where its window was chosen, and whether a selection ran for it.

    Attributes:
        request: The request, or None.
        selected: A selection ran (then the gate memo is out of date).
        chosen_before: The window was chosen on the projection before the
            record (ADK's hook ran on the events preceding it).
    """

    request: CompactionRequest | None
    selected: bool
    chosen_before: bool = False


_NOTHING: Final = _Decision(None, selected=False)


def _decide(
    before: SessionProjection,
    after: SessionProjection,
    record: LoggedEvent,
    config: CompactionConfig,
    *,
    use_memo: bool,
) -> _Decision:
    if after.in_flight is not None or after.last_offset != record.offset:
        return _NOTHING  # waiting on a request, or nothing applied
    if before.last_offset >= record.offset or refused_request_id(record.envelope.event):
        return _NOTHING  # redelivered, or a refusal: no trigger
    event = record.envelope.event
    selected = False
    # 1. ADK's post-invocation hook, when this record shows the invocation before it ended.
    hook = completes_invocation(before, record) and _hook_may_fire(before, config)
    if hook and not (use_memo and _quiet_after_invocation(before, config)):
        selected = True
        start, observed = _hook_tail(before, config) if use_memo else (0, None)
        window = select_post_invocation_window(
            live_events(before, start),
            config,
            seed_invocation_id=SEED_INVOCATION_ID,
            sizes=live_event_sizes(before, start) if use_memo else None,
            observed=observed,
        )
        if window is not None:
            request = compaction_request(
                before, window, decided_at_offset=record.offset, start=start
            )
            if request is not None:
                return _emitted(after, request, selected, chosen_before=True)
    if after.log.records is before.log.records:
        return _Decision(None, selected)  # not stored: a partial chunk or a producer's retry
    # 2. The pre-request check before the model call this record answers.
    answered = answered_model_call(before, event)
    if answered is not None:
        request, ran = _token_check(before, config, answered, record.offset, use_memo=use_memo)
        selected = selected or ran
        if request is not None:
            return _emitted(after, request, selected, chosen_before=True)
    # 3. The pre-request check before the model call that follows this record.
    upcoming = next_model_call(event)
    if upcoming is not None:
        request, ran = _token_check(after, config, upcoming, record.offset, use_memo=use_memo)
        selected = selected or ran
        if request is not None:
            return _emitted(after, request, selected, chosen_before=False)
    return _Decision(None, selected)


def _emitted(
    after: SessionProjection, request: CompactionRequest, selected: bool, *, chosen_before: bool
) -> _Decision:
    """`request` unless a live summary answers it or a refusal named it."""
    if not _may_emit(after, request):
        return _Decision(None, selected)
    return _Decision(request, selected, chosen_before)


def _token_check(
    projection: SessionProjection,
    config: CompactionConfig,
    hook: TokenHook,
    decided_at_offset: Offset,
    *,
    use_memo: bool,
) -> tuple[CompactionRequest | None, bool]:
    """ADK's pre-request token check on `projection`: the request, and whether it selected.

    The recorded count of the hook's agent is read walking back from the
    newest live event to the newest summary; below the threshold the trigger
    cannot fire. Without a recorded count the selection reads the
    characters/4 estimate, unless the gate memo proves no window passes.
    """
    threshold = config.token_threshold
    if not config.has_token_threshold or threshold is None:
        return None, False
    recorded = newest_recorded_count(
        (record.envelope.event for record in reversed(projection.log.live)),
        agent_name=hook.agent_name,
        isolation_scope=hook.isolation_scope,
    )
    if recorded is not None and recorded < threshold:
        return None, False
    if use_memo and _quiet_token_check(projection):
        return None, False
    # Without a recorded count the trigger estimates from the whole contents: the view's,
    # when it serves the hook's request, else the tail is not enough.
    observed = _view_estimate(projection, hook) if use_memo and recorded is None else None
    log = projection.log
    tail = use_memo and (recorded is not None or observed is not None)
    start = decision_start(log.live, log.order, 0) if tail else 0
    window = select_token_threshold_window(
        live_events(projection, start),
        config,
        hook,
        seed_invocation_id=SEED_INVOCATION_ID,
        sizes=live_event_sizes(projection, start) if use_memo else None,
        observed=observed,
    )
    if window is None:
        return None, True
    request = compaction_request(
        projection, window, decided_at_offset=decided_at_offset, start=start
    )
    return request, True


def _hook_tail(
    before: SessionProjection, config: CompactionConfig
) -> tuple[int, ObservedCount | None]:
    """Where the post-invocation hook starts reading `before`, and the count it is handed.

    The count is handed only when the events from that start do not give it.

    When the token trigger is on and no count was recorded since the newest
    summary, it estimates from the whole contents: from the view's when the
    view serves the hook's request, else the selection reads from 0.
    """
    log = before.log
    observed = None
    # The tally keeps the newest unscoped count since the newest summary: what the
    # post-invocation trigger reads.
    if config.has_token_threshold and before.tokens.last_prompt_tokens is None:
        observed = _view_estimate(before, POST_INVOCATION)
        if observed is None:
            return 0, None
    return decision_start(log.live, log.order, config.overlap_size or 0), observed


def _view_estimate(projection: SessionProjection, hook: TokenHook) -> ObservedCount | None:
    """ADK's characters/4 estimate for `hook`, from the view's contents: O(visible).

    None when the view serves another request than the estimate's (another
    agent, branch or scope, or other options): then only the whole live list
    gives it.
    """
    request = ContentsRequest(
        agent_name=hook.agent_name,
        current_branch=hook.current_branch,
        isolation_scope=hook.isolation_scope,
    )
    if request != projection.view.request:
        return None
    characters = content_characters(context_contents(projection))
    return ObservedCount(characters // 4 if characters else None)


def _may_emit(projection: SessionProjection, request: CompactionRequest) -> bool:
    """Neither answered by a live summary nor refused before."""
    request_id = request.request_id
    return not (
        projection.summaries.answers(request_id) or request_id in projection.refused_requests
    )


def _quiet_after_invocation(before: SessionProjection, config: CompactionConfig) -> bool:
    """Whether the post-invocation hook on `before` selects nothing, from O(1) facts.

    Token threshold: a recorded prompt-token count below the threshold (the
    count the trigger reads is the recorded one whenever there is one), or
    the memo's token bound. Sliding window: fewer new invocations than the
    interval, or the memo's sliding bound (computed for this overlap).
    """
    memo = before.gate_memo
    token_quiet = True
    if config.has_token_threshold and config.token_threshold is not None:
        last = before.tokens.last_prompt_tokens
        token_quiet = (last is not None and last < config.token_threshold) or (
            memo is not None and memo.token is not None
        )
    sliding_quiet = True
    if config.has_sliding_window and config.compaction_interval is not None:
        sliding_quiet = before.invocations.since_compaction < config.compaction_interval or (
            memo is not None
            and memo.sliding is not None
            and memo.overlap_size == config.overlap_size
        )
    return token_quiet and sliding_quiet


def _quiet_token_check(projection: SessionProjection) -> bool:
    """Whether a token check on `projection` selects nothing: the memo's token bound holds."""
    memo = projection.gate_memo
    return memo is not None and memo.token is not None


def _remembered(projection: SessionProjection, config: CompactionConfig) -> SessionProjection:
    """`projection` with the gate memo of its live events (after a selection found nothing).

    Without its oldest live events (:mod:`projections.retention.log_retention`) the memo is
    not known and stays None: the next selection runs, as after a rebuild.
    """
    if projection.log.live.first:
        return projection
    live = [event for event in live_events(projection) if event.isolation_scope is None]
    memo = gate_memo(live, live_event_sizes(projection), config)
    return replace(projection, gate_memo=memo)


def compaction_request(
    projection: SessionProjection,
    window: CompactionWindow,
    *,
    decided_at_offset: Offset,
    start: int = 0,
) -> CompactionRequest | None:
    """The request to summarize `window`, chosen from the live events of `projection`.

    The window holds the very event objects of the projection's live records
    from position `start` on, so their offsets are found by identity.
    O(live events from `start`).

    None when no request can carry the window: its seed (the previous
    summary, rolled in) is beyond what a request may carry
    (:func:`schemas.compaction_request.seed_problem`), or the encoded request
    is over one record (:data:`schemas.codec.MAX_RECORD_BYTES`: a seed of
    large inline data, thousands of events with the longest ids). Only a
    summary the tenant wrote itself can be that long, since the summarizer
    clips its own, and no record could hold the request. That trigger then
    decides nothing, as if the window were not worth compacting, and the
    session folds on; ADK, which has no such bound, would summarize it.
    O(window) more when a request is decided: it is encoded once to measure it.

    Raises:
        ValueError: an event of the window is not a live event of `projection` (a bug).
    """
    records: Mapping[int, LoggedEvent] = {
        id(record.envelope.event): record for record in projection.log.live[start:]
    }
    try:
        window_records = [records[id(event)] for event in window.summarized_events]
    except KeyError as exc:
        raise ValueError("a window event is not a live event of the projection") from exc
    event_offsets = tuple(record.offset for record in window_records)
    inherited = tuple(
        InheritedEvent(
            offset=record.offset,
            session_key=record.envelope.session_key,
            origin_offset=record.origin_offset,
        )
        for record in window_records
        if record.origin_offset is not None
    )
    seed = window.seed
    if seed is not None and seed.content is not None and seed_problem(seed.content) is not None:
        return None
    request = CompactionRequest(
        request_id=compaction_request_id(projection.session_key, window.trigger, event_offsets),
        tenant=parse_session_key(projection.session_key).tenant,
        session_key=projection.session_key,
        trigger=window.trigger,
        event_offsets=event_offsets,
        event_ids=window.event_ids,
        start_timestamp=window.start_timestamp,
        end_timestamp=window.end_timestamp,
        seed=None if seed is None else carried_seed(seed),
        decided_at_offset=decided_at_offset,
        inherited=inherited,
        fork_offset=projection.forked_at if inherited else None,
    )
    return request if len(encode(request)) <= MAX_RECORD_BYTES else None


@dataclass(frozen=True, slots=True)
class Step:
    """One record folded by the projector.

    Attributes:
        projection: The projection after the record (waiting on `request` if any).
        request: The request decided by the record, or None.
        chosen_before: The request's window was chosen on the projection
            *before* the record: ADK's hook ran on the events preceding it
            (the post-invocation hook, or the check before the model call the
            record answers). False: on the projection after it (the check
            before the model call that follows the record).
    """

    projection: SessionProjection
    request: CompactionRequest | None
    chosen_before: bool = False


def step(
    projection: SessionProjection,
    record: LoggedEvent,
    config: CompactionConfig,
    *,
    use_memo: bool = True,
) -> Step:
    """Apply `record`, decide, and record the decision: what the projector does per event.

    After a selection that emits nothing, the projection remembers why no
    window can pass the size gate (its gate memo); after a request, it waits
    and remembers nothing. With ``use_memo=False`` every selection runs and
    no memo is kept.
    """
    after = apply(projection, record)
    if after is projection:
        return Step(projection, None)
    decision = _decide(projection, after, record, config, use_memo=use_memo)
    request = decision.request
    if request is not None:
        after = replace(note_request(after, request), gate_memo=None)
    elif decision.selected and use_memo:
        after = _remembered(after, config)
    return Step(after, request, decision.chosen_before)


def replay_decisions(
    session_key: SessionKey,
    records: Iterable[LoggedEvent],
    config: CompactionConfig,
    start: SessionProjection | None = None,
    *,
    use_memo: bool = True,
) -> tuple[SessionProjection, list[CompactionRequest]]:
    """Fold `records` with :func:`step`: the final projection and every request decided."""
    projection = start if start is not None else SessionProjection(session_key)
    requests: list[CompactionRequest] = []
    for record in records:
        folded = step(projection, record, config, use_memo=use_memo)
        projection = folded.projection
        if folded.request is not None:
            requests.append(folded.request)
    return projection, requests
