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

Never two in flight: nothing is decided while the projection waits on a
request. A request whose id a live summary already answers is not emitted
again. The request id is
:func:`~schemas.compaction_request.compaction_request_id` of the session,
the trigger and the window's offsets, so the same log always yields the same
requests: :func:`replay_decisions` is what the projector must emit for a log.

Example, ``compaction_interval=2, overlap_size=0``: inv1 (offsets 0, 1),
inv2 (2, 3); the first event of inv3 (offset 4) completes inv2 and decides
``sliding_window`` over offsets 0..3, ``decided_at_offset=4``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from projections.compaction import select_post_invocation_window
from projections.compaction_config import CompactionConfig
from projections.compaction_window import CompactionWindow
from projections.masking import is_summary
from projections.projection import (
    SessionProjection,
    apply,
    live_events,
    note_request,
)
from projections.token_threshold import POST_INVOCATION, select_token_threshold_window
from schemas.compaction_request import CompactionRequest, SummarySeed, compaction_request_id
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
) -> CompactionRequest | None:
    """The request the projector emits after applying `record`, or None.

    Args:
        before: The projection before `record`.
        after: ``apply(before, record)``.
        record: The event just applied.
        config: The compaction config of the session's app.
    """
    if after.in_flight is not None or after.last_offset != record.offset:
        return None  # waiting on a request, or `record` was redelivered
    if before.last_offset >= record.offset:
        return None
    request = None
    if completes_invocation(before, record) and _hook_may_fire(before, config):
        window = select_post_invocation_window(
            live_events(before), config, seed_invocation_id=SEED_INVOCATION_ID
        )
        if window is not None:
            request = compaction_request(before, window, decided_at_offset=record.offset)
    if request is None and reports_threshold(record, config):
        window = select_token_threshold_window(
            live_events(after), config, POST_INVOCATION, seed_invocation_id=SEED_INVOCATION_ID
        )
        if window is not None:
            request = compaction_request(after, window, decided_at_offset=record.offset)
    if request is None or after.summaries.answers(request.request_id):
        return None
    return request


def compaction_request(
    projection: SessionProjection, window: CompactionWindow, *, decided_at_offset: Offset
) -> CompactionRequest:
    """The request to summarize `window`, chosen from the live events of `projection`.

    The window holds the very event objects of the projection's live records,
    so their offsets are found by identity. O(live events).

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


def step(projection: SessionProjection, record: LoggedEvent, config: CompactionConfig) -> Step:
    """Apply `record`, decide, and record the decision: what the projector does per event."""
    after = apply(projection, record)
    if after is projection:
        return Step(projection, None)
    request = decide_compaction(projection, after, record, config)
    if request is not None:
        after = note_request(after, request)
    return Step(after, request)


def replay_decisions(
    session_key: SessionKey,
    records: Iterable[LoggedEvent],
    config: CompactionConfig,
    start: SessionProjection | None = None,
) -> tuple[SessionProjection, list[CompactionRequest]]:
    """Fold `records` with :func:`step`: the final projection and every request decided."""
    projection = start if start is not None else SessionProjection(session_key)
    requests: list[CompactionRequest] = []
    for record in records:
        folded = step(projection, record, config)
        projection = folded.projection
        if folded.request is not None:
            requests.append(folded.request)
    return projection, requests
