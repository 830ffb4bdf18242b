"""When the projector asks for a compaction, and which request it emits. Pure: no I/O, no clock.

Per record, :func:`step` applies it and evaluates the ADK hooks it shows
(:mod:`projections.compaction.hooks`): the post-invocation hook on the
projection before the record, the token check before the model call it
answers (before) or that follows it (after). Cheap pre-checks and the gate
memo skip selections that cannot pass (:mod:`projections.compaction.quiet`);
a selection reads the tail :func:`~projections.compaction.decision_window.decision_start`
gives. Never two in flight, never a request a live summary answers or a
refusal named, none for an app ADK compacts (:mod:`projections.compaction.ownership`);
:func:`replay_decisions` is what the projector emits for a log.
Why, and what a stream cannot reproduce: projections/README.md, "When it compacts".

Example, ``compaction_interval=2, overlap_size=0``: inv1 (offsets 0, 1),
inv2 (2, 3); the first event of inv3 (offset 4) completes inv2 and decides
``sliding_window`` over offsets 0..3, ``decided_at_offset=4``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.decision_window import decision_start
from projections.compaction.hooks import answered_model_call, completes_invocation, next_model_call
from projections.compaction.ownership import pipeline_compacts
from projections.compaction.quiet import (
    hook_may_fire,
    quiet_after_invocation,
    quiet_token_check,
    remembered,
)
from projections.compaction.token_count import content_characters, newest_recorded_count
from projections.compaction.token_threshold import (
    POST_INVOCATION,
    ObservedCount,
    TokenHook,
    select_token_threshold_window,
)
from projections.compaction.window_request import SEED_INVOCATION_ID, compaction_request
from projections.contents.contents_request import ContentsRequest
from projections.contents.context_view import view_contents
from projections.event_kinds import is_creation, is_memory_mark, refused_request_id
from projections.fold.projection import (
    SessionProjection,
    apply,
    context_contents,
    live_event_sizes,
    live_events,
    note_request,
)
from schemas.compaction_request import CompactionRequest
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent


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
        use_memo: Skip selections that :mod:`projections.compaction.quiet`
            proves empty; False runs every selection
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
    if not pipeline_compacts(config):
        return _NOTHING  # ADK's runner compacts this app: its summaries are folded, never asked
    if after.in_flight is not None or after.last_offset != record.offset:
        return _NOTHING  # waiting on a request, or nothing applied
    if before.last_offset >= record.offset or _bookkeeping(record, after):
        return _NOTHING  # redelivered, a refusal, memory or creation record, or refused
    event = record.envelope.event
    selected = False
    # 1. ADK's post-invocation hook, when this record shows the invocation before it ended.
    hook = completes_invocation(before, record) and hook_may_fire(before, config)
    if hook and not (use_memo and quiet_after_invocation(before, config)):
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


def _bookkeeping(record: LoggedEvent, after: SessionProjection) -> bool:
    """Whether `record` is a refusal, a memory or creation record, or a refused one: no trigger."""
    event = record.envelope.event
    return (
        refused_request_id(event) is not None
        or is_memory_mark(event)
        or is_creation(event)
        or after.conditions.refused[-1:] == (record.offset,)
    )


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
    if use_memo and quiet_token_check(projection):
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

    From the estimate view when it serves the request (after an invocation:
    no agent, branch or scope). None when neither view serves it (another
    agent, branch or scope, or other options): then only the whole live list
    gives it.
    """
    request = ContentsRequest(
        agent_name=hook.agent_name,
        current_branch=hook.current_branch,
        isolation_scope=hook.isolation_scope,
    )
    if request == projection.view.request:
        characters = content_characters(context_contents(projection))
    elif projection.estimate_view is not None and request == projection.estimate_view.request:
        characters = content_characters(view_contents(projection.estimate_view))
    else:
        return None
    return ObservedCount(characters // 4 if characters else None)


def _may_emit(projection: SessionProjection, request: CompactionRequest) -> bool:
    """Neither answered by a live summary nor refused before."""
    request_id = request.request_id
    return not (
        projection.summaries.answers(request_id) or request_id in projection.refused_requests
    )


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
        after = remembered(after, config)
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
