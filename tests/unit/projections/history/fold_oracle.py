"""What the existing fold says about a session's records, for the history tests' oracles.

Everything here is read from :func:`projections.fold.projection.project` (the
projector's fold and its context view), :func:`projections.fold.rebuild.effective_records`
(the plain rebuild) and :func:`projections.compaction.masking.mask_compacted`
(§3.3), never from :mod:`projections.history`'s rules (only its status names);
stale records from :func:`projections.fold.rebuild.judged` and the fold's refusals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from projections.compaction.masking import mask_compacted
from projections.contents.context_view import rebuild_view
from projections.contents.visibility import is_included, recorded_call_ids
from projections.event_kinds import is_creation
from projections.fold.projection import SessionProjection, apply, inheriting, project
from projections.fold.rebuild import current_incarnation, effective_records, judged
from projections.history.classification import classify_session
from projections.history.event_status import APPLIED, EventStatus
from projections.history.incremental import HistoryState, advance
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent


@dataclass(frozen=True)
class FoldFacts:
    """The fold's own answers about one session's records."""

    records: tuple[Offset, ...]
    """Every record, rising offsets."""
    effective: frozenset[Offset]
    """The records the plain rebuild keeps (the others are passed over)."""
    applied: frozenset[Offset]
    """The records the projection's log holds."""
    unannulled: frozenset[Offset]
    """The projection's live list: applied and left by rewinds."""
    scopes: frozenset[str | None]
    """The isolation scopes of the live list."""
    shown_ids: dict[str | None, Counter[str]]
    """Per scope: the ids of what §3.3 masking shows of the scope's live events."""
    view_holds: dict[str | None, frozenset[Offset]]
    """Per scope: the summaries and raw events a view for that scope holds."""
    view_included: dict[str | None, frozenset[Offset]]
    """Per scope: the live records that view's inclusion filter (§8.2) passes."""
    deletions: frozenset[Offset]
    """The records after which the projection says it was deleted there."""
    incarnation: frozenset[Offset]
    """What the plain rebuild keeps after the last deletion (answers to retired requests not)."""
    refused: frozenset[Offset]
    """The conditional records the fold refused (its bounded set, checked against the rebuild)."""
    writer_offset: int
    """The projection's writer offset."""


def fold_facts(records: Sequence[LoggedEvent]) -> FoldFacts:
    """Fold `records` as the projector does and read its answers."""
    session = next(r.envelope.session_key for r in records if r.origin_offset is None)
    start = SessionProjection(session)
    if records and records[0].origin_offset is not None:  # a fork: its inherited records first
        start = inheriting(start)
    projection = start
    deletions: set[Offset] = set()
    for record in records:
        projection = apply(projection, record)
        if projection.deleted_at == record.offset:
            deletions.add(record.offset)
    assert projection == project(session, records, start)
    refused = judged(records).refused
    assert set(projection.conditions.refused) <= set(refused)
    assert all(
        offset in projection.conditions.refused
        for offset in refused
        if offset > projection.conditions.refused_floor
    )
    live = list(projection.log.live)
    events = [record.envelope.event for record in live]
    call_ids = recorded_call_ids(events)
    scopes = frozenset(event.isolation_scope for event in events) | {None}
    shown: dict[str | None, Counter[str]] = {}
    holds: dict[str | None, frozenset[Offset]] = {}
    included: dict[str | None, frozenset[Offset]] = {}
    for scope in scopes:
        scoped = [event for event in events if event.isolation_scope == scope]
        shown[scope] = Counter(event.id for event in mask_compacted(scoped, "model"))
        if scope is None:  # the projector's own view (it follows the agent that runs next)
            view = projection.view
        else:
            request = replace(projection.view.request, isolation_scope=scope)
            view = rebuild_view(request, live)
        holds[scope] = frozenset(r.offset for r in (*view.raw, *view.summaries))
        included[scope] = frozenset(
            record.offset
            for record, event in zip(live, events, strict=True)
            if is_included(event, view.request, call_ids)
        )
    return FoldFacts(
        records=tuple(record.offset for record in records),
        effective=frozenset(record.offset for record in effective_records(records)),
        applied=frozenset(record.offset for record in projection.log.records),
        unannulled=frozenset(record.offset for record in live),
        scopes=scopes,
        shown_ids=shown,
        view_holds=holds,
        view_included=included,
        deletions=frozenset(deletions),
        incarnation=frozenset(record.offset for record in current_incarnation(records)),
        refused=frozenset(Offset(offset) for offset in refused),
        writer_offset=projection.conditions.writer_offset,
    )


def assert_statuses_match_fold(
    records: Sequence[LoggedEvent], statuses: Mapping[Offset, EventStatus]
) -> FoldFacts:
    """Assert that `statuses` say of `records` what the fold and its views say; its facts."""
    fold = fold_facts(records)
    assert tuple(statuses) == fold.records
    with_status = _by_status(statuses)
    applied = with_status(*APPLIED, EventStatus.CREATION)
    assert applied == fold.applied, "applied records"
    creations = {r.offset for r in records if is_creation(r.envelope.event)}
    assert with_status(EventStatus.CREATION) <= creations, "creation records"
    assert fold.effective - fold.applied == with_status(EventStatus.FORK), "fork records"
    unannulled = with_status(EventStatus.LIVE, EventStatus.MASKED, EventStatus.SUPERSEDED)
    assert unannulled == fold.unannulled, "records rewinds leave"
    assert with_status(EventStatus.DELETION) == fold.deletions, "deletion records"
    last = max(fold.deletions, default=None)
    stale_now = {offset for offset in fold.refused if last is None or offset > last}
    assert with_status(EventStatus.STALE) == stale_now, "stale records"
    if last is not None:
        after = {offset for offset in statuses if offset > last}
        assert with_status(EventStatus.DELETED) | fold.deletions == (
            {offset for offset in statuses if offset < last} | fold.deletions
        ) | (after - fold.incarnation - fold.refused), "deleted records"
    events = {record.offset: record.envelope.event for record in records}
    live = with_status(EventStatus.LIVE)
    for scope in fold.scopes:
        scoped = {offset for offset in live if events[offset].isolation_scope == scope}
        shown = Counter(events[offset].id for offset in scoped)
        assert shown == fold.shown_ids[scope], f"what masking shows in scope {scope!r}"
        held = scoped & fold.view_included[scope]
        assert held == fold.view_holds[scope], f"what the view of scope {scope!r} holds"
    return fold


def _by_status(
    statuses: Mapping[Offset, EventStatus],
) -> Callable[..., frozenset[Offset]]:
    def with_status(*wanted: EventStatus) -> frozenset[Offset]:
        return frozenset(offset for offset, status in statuses.items() if status in wanted)

    return with_status


def checked_statuses(records: Sequence[LoggedEvent]) -> dict[Offset, EventStatus]:
    """`records`' full classification, checked against the fold and the incremental fold."""
    statuses = classify_session(records)
    fold = assert_statuses_match_fold(records, statuses)
    state: HistoryState | None = None
    incremental: dict[int, EventStatus] = {}
    for record in records:
        state, changes = advance(state, record.offset, record.envelope)
        incremental.update(changes)
    assert incremental == statuses
    assert state is None or state.writer_offset == fold.writer_offset, "writer offset"
    return statuses
