"""Fold a session's events into its projection. Pure: no I/O, no clock.

:func:`apply` folds one record into a :class:`SessionProjection`, a value of
persistent parts (the log, state, invocation counts, tokens, live summaries,
the request in flight, refused requests, the gate memo, the next-agent trail
and the incremental context view), so each version shares almost all of its
structure with the one before: a raw event costs O(log n). A redelivered
record returns the very same projection; a rewind recomputes the parts derived
from the live list. The parts, their memory and the idempotence rules:
projections/README.md, "The fold and its state".

Example: ``apply(p, LoggedEvent(Offset(7), envelope))`` -> the projection with
``last_offset == 7``; applying offset 7 again -> that same projection.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pyrsistent import PSet, pset

from projections.compaction.gate_memo import GateMemo, after_live_event
from projections.compaction.in_flight import InFlightRequest
from projections.compaction.size_gate import EventSizes, event_json_size
from projections.compaction.summary_ledger import (
    SummaryLedger,
    is_duplicate_summary,
    note_summary,
    summary_ledger,
)
from projections.contents.assembly import ContentsRequest, build_contents
from projections.contents.context_view import (
    ContextView,
    empty_view,
    note_live_event,
    rebuild_view,
    view_contents,
)
from projections.contents.next_agent import NextAgentTrail, agent_to_run, note_event, trail_of
from projections.event_kinds import (
    REFUSAL_AUTHOR,
    is_creation,
    is_deletion,
    is_memory_mark,
    is_rewind,
    is_summary,
    refused_request_id,
    summary_request_id,
)
from projections.fold.conditions import (
    Conditions,
    is_refused,
    with_refusal,
    with_writer,
    without_writer,
)
from projections.fold.fork import INHERITING, fork_source
from projections.fold.invocations import InvocationCounts, count_invocations
from projections.fold.invocations import note_live_event as note_invocation
from projections.fold.scoped_state import ScopedState, apply_state_delta
from projections.fold.session_log import SessionLog, append_record, append_unlisted, is_stored
from projections.fold.token_usage import TokenTally, add_reported, observe_live, recount_last
from projections.retention.release_guard import HeldIds, released_name
from projections.retention.retained_vector import NeedsHistory
from schemas.compaction_request import CompactionRequest
from schemas.errors import SessionMismatchError
from schemas.event import Content, Event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent

NO_OFFSET = Offset(-1)
"""``last_offset`` of a projection that has applied nothing."""

ESTIMATE_REQUEST = ContentsRequest()
"""The request of ADK's token check after an invocation: no agent, branch or scope."""


@dataclass(frozen=True, slots=True)
class SessionProjection:
    """Everything the pipeline knows about one session, as of `last_offset`.

    Attributes:
        session_key: The session.
        last_offset: Offset of the last applied record (``-1``: none).
        log: Applied and live records.
        state: Persisted state by scope.
        invocations: Invocation counts, total and since the last summary.
        tokens: Token usage.
        summaries: The compaction boundary and the applied request ids.
        in_flight: The compaction request being summarized, if any.
        refused_requests: Ids of the compaction requests a refusal named; none
            of them is ever asked for again.
        gate_memo: Why no compaction window can pass the size gate yet, when
            the decision found out (None: not known, select again).
        next_agent: What picks the agent a read without one is for: the
            agent ADK's router would run next, else the configured root.
        view: The incremental context view, for that agent.
        estimate_view: The incremental view of ADK's post-invocation request (no
            agent, branch or scope: :data:`ESTIMATE_REQUEST`), kept when the app's token
            trigger estimates from it (None: not kept). The post-invocation check
            then reads its characters/4 estimate from this view, not from the whole
            session, which retention may have released.
        forked_at: The offset of the session's fork record, when it is a
            fork (:mod:`projections.fold.fork`).
        deleted_at: The offset of the deletion record that emptied the session,
            while nothing was applied after it (a read answers "not found").
        retired_requests: Ids of the compaction requests a deleted incarnation
            knew; a summary or refusal naming one is dropped for good
            (projections/README.md, "Deletion").
        conditions: The writer offset conditional records are judged by, and
            the recent refusals (:mod:`projections.fold.conditions`).
    """

    session_key: SessionKey
    last_offset: Offset = NO_OFFSET
    log: SessionLog = field(default_factory=SessionLog)
    state: ScopedState = field(default_factory=ScopedState)
    invocations: InvocationCounts = field(default_factory=InvocationCounts)
    tokens: TokenTally = field(default_factory=TokenTally)
    summaries: SummaryLedger = field(default_factory=SummaryLedger)
    in_flight: InFlightRequest | None = None
    refused_requests: PSet[str] = field(default_factory=pset)
    gate_memo: GateMemo | None = None
    next_agent: NextAgentTrail = field(default_factory=NextAgentTrail)
    view: ContextView = field(default_factory=ContextView)
    estimate_view: ContextView | None = None
    forked_at: Offset | None = None
    deleted_at: Offset | None = None
    retired_requests: PSet[str] = field(default_factory=pset)
    conditions: Conditions = field(default_factory=Conditions)


def empty_projection(
    session_key: SessionKey, view_request: ContentsRequest | None = None, *, estimate: bool = False
) -> SessionProjection:
    """The projection of a session without events, its view serving `view_request`.

    ``view_request.agent_name`` is the app's root agent as configured: the
    agent a read without one is for until an agent replies. `estimate` keeps
    the view of :data:`ESTIMATE_REQUEST` too (an app whose token trigger the
    pipeline runs).

    Raises:
        ValueError: `view_request` is not in default mode.
    """
    request = view_request or ContentsRequest()
    return SessionProjection(
        session_key,
        next_agent=NextAgentTrail(request.agent_name),
        view=empty_view(request),
        estimate_view=empty_view(ESTIMATE_REQUEST) if estimate else None,
    )


def configured_projection(projection: SessionProjection) -> SessionProjection:
    """The empty projection `projection` was created as (:func:`empty_projection`)."""
    return empty_projection(
        projection.session_key,
        configured_view_request(projection),
        estimate=projection.estimate_view is not None,
    )


def configured_view_request(projection: SessionProjection) -> ContentsRequest:
    """The request `projection` was created with (:func:`empty_projection`): the root's view."""
    return replace(projection.view.request, agent_name=projection.next_agent.root)


def default_agent(projection: SessionProjection) -> str:
    """The agent a read without one is for: the one ADK's router runs next (O(1)).

    The view serves exactly this agent.
    """
    return agent_to_run(projection.next_agent)


def apply(projection: SessionProjection, record: LoggedEvent) -> SessionProjection:
    """The projection after one more event of its session.

    A fork record (:mod:`projections.fold.fork`) applies to a projection that
    folded its inherited records from :func:`inheriting`; a fork record
    after the session's own records changes nothing but the offset.

    Raises:
        SessionMismatchError: `record` belongs to another session and was
            not inherited (a bug).
        NeedsHistory: `record` is a fork record and the records it inherits
            are not folded yet (the caller folds them first).
        ForkError: `record` is a malformed fork record.
    """
    if record.envelope.session_key != projection.session_key and record.origin_offset is None:
        raise SessionMismatchError(
            projection_key=projection.session_key, event_key=record.envelope.session_key
        )
    if record.offset <= projection.last_offset:
        return projection  # redelivered: applied before
    if is_refused(projection.conditions, record):  # a writer it did not expect came first
        conditions = with_refusal(projection.conditions, record.offset)
        return replace(projection, last_offset=record.offset, conditions=conditions)
    event = record.envelope.event
    if is_deletion(event):
        return _deleted(projection, record.offset)
    if is_memory_mark(event):  # the sink's word on memory: only the offset moves
        return replace(projection, last_offset=record.offset)
    if projection.retired_requests and _names_retired(projection.retired_requests, event):
        return replace(projection, last_offset=record.offset)
    if projection.deleted_at is not None:
        projection = replace(projection, deleted_at=None)
    refused = refused_request_id(event)
    if refused is not None:
        return _refused(projection, record.offset, refused)
    if event.author == REFUSAL_AUTHOR and fork_source(record.envelope) is not None:
        return _forked(projection, record.offset)
    if event.partial:  # what ADK's session service never stores (reference §11.1)
        return replace(projection, last_offset=record.offset)
    if is_creation(event):  # its initial state, and the writer offset: nothing else
        return replace(
            projection,
            last_offset=record.offset,
            log=append_unlisted(projection.log, record),
            state=apply_state_delta(projection.state, event),
            conditions=with_writer(projection.conditions, record),
        )
    released = projection.log.released
    if released:
        named = released_name(released, event, _held_ids(projection))
        if named is not None:
            raise NeedsHistory(named)
    if is_stored(projection.log, event) or is_duplicate_summary(projection.summaries, record):
        # An event equal to a stored one (a producer's retry, §11.1), or a second
        # summary for a request a live summary answers.
        return replace(projection, last_offset=record.offset)
    log, rewound = append_record(projection.log, record)
    if log.live.first and not log.order.ordered:
        raise NeedsHistory("the whole live list of a session out of order")
    state = apply_state_delta(projection.state, event)
    tokens = add_reported(projection.tokens, event)
    conditions = projection.conditions
    if summary_request_id(event) is None:  # no pipeline summary: a writer record
        conditions = with_writer(conditions, record)
    if rewound:
        return _recomputed(projection, record.offset, log, state, tokens, conditions)
    if is_rewind(event):  # to an unknown invocation: only itself goes
        return replace(
            projection,
            last_offset=record.offset,
            log=log,
            state=state,
            tokens=tokens,
            gate_memo=None,
            conditions=conditions,
        )
    summaries, in_flight = projection.summaries, projection.in_flight
    if is_summary(event):
        summaries = note_summary(summaries, record)
        if in_flight is not None and summary_request_id(event) == in_flight.request_id:
            in_flight = None
    invocations = note_invocation(projection.invocations, event)
    next_agent = note_event(projection.next_agent, event)
    return SessionProjection(
        session_key=projection.session_key,
        last_offset=record.offset,
        log=log,
        state=state,
        invocations=invocations,
        tokens=observe_live(tokens, event),
        summaries=summaries,
        in_flight=in_flight,
        refused_requests=projection.refused_requests,
        gate_memo=after_live_event(
            projection.gate_memo,
            event,
            log.live_sizes[-1],
            projection.invocations,
            invocations,
            projection.log.first_positions,
        ),
        next_agent=next_agent,
        view=_followed(projection.view, next_agent, record, log),
        estimate_view=_noted(projection.estimate_view, record, log),
        forked_at=projection.forked_at,
        retired_requests=projection.retired_requests,
        conditions=conditions,
    )


def _held_ids(projection: SessionProjection) -> HeldIds:
    """The ids `projection` holds, which the released-id check skips."""
    log = projection.log
    return HeldIds(projection.invocations.invocation_ids, log.order.call_positions, log.live.first)


def inheriting(projection: SessionProjection) -> SessionProjection:
    """`projection` (of a session without records) ready to fold the records a fork inherits."""
    return replace(projection, last_offset=INHERITING)


def _deleted(projection: SessionProjection, offset: Offset) -> SessionProjection:
    """The projection after a deletion record at `offset`: empty, but for what stays exactly once.

    The offset watermark stays (a redelivered earlier record is skipped), and
    every compaction request the deleted incarnation knew is retired: the ones
    its summaries (live or rewound) and refusals name and the one in flight.
    """
    retired = projection.retired_requests.update(projection.summaries.request_ids.keys())
    retired = retired.update(projection.refused_requests)
    retired = retired.update(
        request_id
        for held in projection.log.records.tail
        if (request_id := summary_request_id(held.envelope.event)) is not None
    )
    if projection.in_flight is not None:
        retired = retired.add(projection.in_flight.request_id)
    return replace(
        configured_projection(projection),
        last_offset=offset,
        deleted_at=offset,
        retired_requests=retired,
        conditions=without_writer(projection.conditions),
    )


def _names_retired(retired: PSet[str], event: Event) -> bool:
    """Whether `event` is a summary or refusal of a request a deleted incarnation knew."""
    request_id = summary_request_id(event) or refused_request_id(event)
    return request_id is not None and request_id in retired


def _forked(projection: SessionProjection, offset: Offset) -> SessionProjection:
    """The projection after its fork record: the inherited history becomes the session's.

    The source's in-flight request is not the fork's (its summary goes to the
    source), so the fork decides anew.
    """
    if projection.last_offset == NO_OFFSET:
        raise NeedsHistory("the records a fork inherits")
    if projection.last_offset >= 0:  # not the session's first record: nothing to inherit
        return replace(projection, last_offset=offset)
    return replace(projection, last_offset=offset, in_flight=None, gate_memo=None, forked_at=offset)


def _refused(projection: SessionProjection, offset: Offset, request_id: str) -> SessionProjection:
    """The projection after a refusal of `request_id`: only the request bookkeeping moves."""
    in_flight = projection.in_flight
    if in_flight is not None and in_flight.request_id == request_id:
        in_flight = None
    return replace(
        projection,
        last_offset=offset,
        in_flight=in_flight,
        refused_requests=projection.refused_requests.add(request_id),
    )


def _recomputed(
    projection: SessionProjection,
    offset: Offset,
    log: SessionLog,
    state: ScopedState,
    tokens: TokenTally,
    conditions: Conditions,
) -> SessionProjection:
    """The projection after a rewind: every part read from the live list is recomputed."""
    live = [record.envelope.event for record in log.live]
    next_agent = trail_of(projection.next_agent.root, live)
    request = replace(projection.view.request, agent_name=agent_to_run(next_agent))
    return SessionProjection(
        session_key=projection.session_key,
        last_offset=offset,
        log=log,
        state=state,
        invocations=count_invocations(live),
        tokens=recount_last(tokens, live),
        summaries=summary_ledger(log.live),
        in_flight=projection.in_flight,
        refused_requests=projection.refused_requests,
        gate_memo=None,
        next_agent=next_agent,
        view=rebuild_view(request, log.live),
        estimate_view=(
            None
            if projection.estimate_view is None
            else rebuild_view(projection.estimate_view.request, log.live)
        ),
        forked_at=projection.forked_at,
        retired_requests=projection.retired_requests,
        conditions=conditions,
    )


def _followed(
    view: ContextView, next_agent: NextAgentTrail, record: LoggedEvent, log: SessionLog
) -> ContextView:
    """`view` after the live event `record`, serving the agent `next_agent` picks.

    The same agent: the event is noted, O(log n). Another agent: the view is
    rebuilt for it from the live list (which holds `record`), O(n).
    """
    agent = agent_to_run(next_agent)
    if agent == view.request.agent_name:
        return note_live_event(view, record, log.live)
    return rebuild_view(replace(view.request, agent_name=agent), log.live)


def _noted(view: ContextView | None, record: LoggedEvent, log: SessionLog) -> ContextView | None:
    """The estimate view after the live event `record` (None: not kept), O(log n)."""
    return None if view is None else note_live_event(view, record, log.live)


def project(
    session_key: SessionKey,
    records: Iterable[LoggedEvent],
    start: SessionProjection | None = None,
) -> SessionProjection:
    """Fold `records` into the projection `start` (an empty one by default)."""
    initial = start if start is not None else SessionProjection(session_key)
    return functools.reduce(apply, records, initial)


def note_request(projection: SessionProjection, request: CompactionRequest) -> SessionProjection:
    """The projection waiting on `request`, as the projector records its own decision.

    A request that a live summary already answers, or that a refusal named,
    changes nothing; a retry of the in-flight request (a higher attempt)
    replaces it.

    Raises:
        SessionMismatchError: `request` is for another session (a bug).
    """
    if request.session_key != projection.session_key:
        raise SessionMismatchError(
            projection_key=projection.session_key, event_key=request.session_key
        )
    if (
        projection.summaries.answers(request.request_id)
        or request.request_id in projection.refused_requests
    ):
        return projection
    return replace(projection, in_flight=InFlightRequest.of(request))


def forget_request(projection: SessionProjection, request_id: str) -> SessionProjection:
    """The projection no longer waiting on `request_id` (timed out or refused)."""
    in_flight = projection.in_flight
    if in_flight is None or in_flight.request_id != request_id:
        return projection
    return replace(projection, in_flight=None)


def live_events(projection: SessionProjection, start: int = 0) -> list[Event]:
    """The live events (rewinds applied) from position `start`: what selection reads.

    Stream order. O(n - start).
    """
    return [record.envelope.event for record in projection.log.live[start:]]


def live_event_sizes(projection: SessionProjection, start: int = 0) -> EventSizes:
    """The size-gate sizes of the live events from position `start`. O(n - start).

    Each was measured when its event was applied.

    The lookup goes by object identity, so it answers for the very event
    objects :func:`live_events` returns; any other event is measured.
    """
    log = projection.log
    table = {
        id(record.envelope.event): size
        for record, size in zip(log.live[start:], log.live_sizes[start:], strict=True)
    }

    def size_of(event: Event) -> int:
        size = table.get(id(event))
        return size if size is not None else event_json_size(event)

    return size_of


def context_contents(
    projection: SessionProjection, request: ContentsRequest | None = None
) -> list[Content]:
    """The request contents for `request` (the view's own request by default).

    The view's request is answered from the incremental view, O(visible);
    any other request (another agent or branch, ``none`` mode) is assembled on
    demand from the retained log, O(events).
    """
    if request is None or request == projection.view.request:
        return view_contents(projection.view)
    return build_contents([record.envelope.event for record in projection.log.records], request)
