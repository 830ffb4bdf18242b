"""When the projector asks for a compaction, and which request it emits. Pure: no I/O, no clock.

ADK runs its compaction in the runner's post-invocation hook: after the
invocation's last event and before the next user message, over the session
as it is then (reference §6). A stream has no "end of invocation" record, so
the projector decides at two exact points:

* **an invocation has completed** when the first event of a *new*
  invocation arrives: a raw event (neither a summary nor a rewind) whose
  non-empty ``invocation_id`` no earlier record of the session carried,
  after at least one live invocation. The hook is evaluated on the
  projection *before* that event, which is exactly the list ADK's hook
  saw: :func:`~projections.compaction.select_post_invocation_window`, token
  threshold first, then the sliding window;
* **a model response reports prompt tokens at or over the threshold**: the
  token trigger alone, on the projection *after* that event.

Cheap pre-checks keep the O(history) selection off the hot path: the
post-invocation hook runs only when ``invocations.since_compaction`` has
reached ``compaction_interval`` or the last recorded prompt-token count has
reached ``token_threshold``; the response check only when the event itself
reports ``prompt_token_count >= token_threshold``. (A session whose model
calls report no usage is therefore compacted by the sliding window only: the
characters/4 estimate ADK falls back to is read when the sliding pre-check
lets the hook run, never on its own.)

An armed trigger whose windows are not worth compacting stays armed, and
ADK selects again at every hook. The projector remembers why nothing can
pass the size gate (:mod:`projections.gate_memo`) and skips the selection
while that stays true, so an armed but quiet trigger costs O(1) per event;
the same O(1) facts skip a trigger whose own count says it cannot fire
(``since_compaction`` below the interval, a recorded prompt-token count
below the threshold). The decisions are exactly those of the plain
selection: ``use_memo=False`` runs it alone, and a property test holds the
two equal.

Never two in flight: nothing is decided while the projection waits on a
request. A request whose id a live summary already answers, or that a
refusal named, is not emitted again; a refusal is not itself a trigger. The
request id is
:func:`~schemas.compaction_request.compaction_request_id` of the session,
the trigger and the window's offsets, so the same log always yields the same
requests: :func:`replay_decisions` is what the projector must emit for a log.

Example, ``compaction_interval=2, overlap_size=0``: inv1 (offsets 0, 1),
inv2 (2, 3); the first event of inv3 (offset 4) completes inv2 and decides
``sliding_window`` over offsets 0..3, ``decided_at_offset=4``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from projections.compaction import select_post_invocation_window
from projections.compaction_config import CompactionConfig
from projections.compaction_window import CompactionWindow
from projections.gate_memo import gate_memo
from projections.masking import is_summary
from projections.projection import (
    SessionProjection,
    apply,
    live_event_sizes,
    live_events,
    note_request,
)
from projections.summary_request import refused_request_id
from projections.token_threshold import POST_INVOCATION, select_token_threshold_window
from schemas.compaction_request import (
    CompactionRequest,
    SummarySeed,
    compaction_request_id,
    seed_problem,
)
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


def reports_threshold(record: LoggedEvent, config: CompactionConfig) -> bool:
    """Whether `record` is an unscoped event reporting prompt tokens at or over the threshold."""
    threshold = config.token_threshold
    event = record.envelope.event
    usage = event.usage_metadata
    return (
        config.has_token_threshold
        and threshold is not None
        and event.isolation_scope is None
        and usage is not None
        and usage.prompt_token_count is not None
        and usage.prompt_token_count >= threshold
    )


def _hook_may_fire(before: SessionProjection, config: CompactionConfig) -> bool:
    """The pre-check of the post-invocation hook: O(1)."""
    interval, threshold = config.compaction_interval, config.token_threshold
    sliding = (
        config.has_sliding_window
        and interval is not None
        and before.invocations.since_compaction >= interval
    )
    last = before.tokens.last_prompt_tokens
    token = (
        config.has_token_threshold
        and threshold is not None
        and last is not None
        and last >= threshold
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
    """A decision and whether a selection ran for it (then the gate memo is out of date)."""

    request: CompactionRequest | None
    selected: bool


def _decide(
    before: SessionProjection,
    after: SessionProjection,
    record: LoggedEvent,
    config: CompactionConfig,
    *,
    use_memo: bool,
) -> _Decision:
    if after.in_flight is not None or after.last_offset != record.offset:
        return _Decision(None, selected=False)  # waiting on a request, or nothing applied
    if before.last_offset >= record.offset or refused_request_id(record.envelope.event):
        return _Decision(None, selected=False)  # redelivered, or a refusal: no trigger
    request, selected = None, False
    hook = completes_invocation(before, record) and _hook_may_fire(before, config)
    if hook and not (use_memo and _quiet_after_invocation(before, config)):
        selected = True
        window = select_post_invocation_window(
            live_events(before),
            config,
            seed_invocation_id=SEED_INVOCATION_ID,
            sizes=live_event_sizes(before) if use_memo else None,
        )
        if window is not None:
            request = compaction_request(before, window, decided_at_offset=record.offset)
    token_check = request is None and reports_threshold(record, config)
    if token_check and not (use_memo and _quiet_token_check(after)):
        selected = True
        window = select_token_threshold_window(
            live_events(after),
            config,
            POST_INVOCATION,
            seed_invocation_id=SEED_INVOCATION_ID,
            sizes=live_event_sizes(after) if use_memo else None,
        )
        if window is not None:
            request = compaction_request(after, window, decided_at_offset=record.offset)
    if request is None or not _may_emit(after, request):
        return _Decision(None, selected)
    return _Decision(request, selected)


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


def _quiet_token_check(after: SessionProjection) -> bool:
    """Whether the token check on `after` selects nothing: the memo's token bound holds."""
    memo = after.gate_memo
    return memo is not None and memo.token is not None


def _remembered(projection: SessionProjection, config: CompactionConfig) -> SessionProjection:
    """`projection` with the gate memo of its live events (after a selection found nothing)."""
    live = [event for event in live_events(projection) if event.isolation_scope is None]
    memo = gate_memo(live, live_event_sizes(projection), config)
    return replace(projection, gate_memo=memo)


def compaction_request(
    projection: SessionProjection, window: CompactionWindow, *, decided_at_offset: Offset
) -> CompactionRequest | None:
    """The request to summarize `window`, chosen from the live events of `projection`.

    The window holds the very event objects of the projection's live records,
    so their offsets are found by identity. O(live events).

    None when the window's seed (the previous summary, rolled in) is beyond
    what a request may carry (:func:`schemas.compaction_request.seed_problem`):
    only a summary the tenant wrote itself can be that long, since the
    summarizer clips its own, and no request could name it. That trigger then
    decides nothing, as if the window were not worth compacting; ADK, which
    has no such bound, would summarize it.

    Raises:
        ValueError: an event of the window is not a live event of `projection` (a bug).
    """
    offsets: Mapping[int, Offset] = {
        id(record.envelope.event): record.offset for record in projection.log.live
    }
    try:
        event_offsets = tuple(offsets[id(event)] for event in window.summarized_events)
    except KeyError as exc:
        raise ValueError("a window event is not a live event of the projection") from exc
    seed = window.seed
    if seed is not None and seed.content is not None and seed_problem(seed.content) is not None:
        return None
    return CompactionRequest(
        request_id=compaction_request_id(projection.session_key, window.trigger, event_offsets),
        tenant=parse_session_key(projection.session_key).tenant,
        session_key=projection.session_key,
        trigger=window.trigger,
        event_offsets=event_offsets,
        event_ids=window.event_ids,
        start_timestamp=window.start_timestamp,
        end_timestamp=window.end_timestamp,
        seed=(
            None
            if seed is None or seed.content is None
            else SummarySeed(
                timestamp=seed.timestamp,
                author=seed.author,
                branch=seed.branch,
                content=seed.content,
            )
        ),
        decided_at_offset=decided_at_offset,
    )


@dataclass(frozen=True, slots=True)
class Step:
    """One record folded by the projector.

    Attributes:
        projection: The projection after the record (waiting on `request` if any).
        request: The request decided by the record, or None.
    """

    projection: SessionProjection
    request: CompactionRequest | None


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
    return Step(after, request)


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
