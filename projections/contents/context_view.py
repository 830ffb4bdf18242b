"""The incremental context view: an agent's request contents at O(visible) cost. Pure.

A view serves one :class:`~projections.contents.assembly.ContentsRequest`
(default mode). Instead of the session it keeps a *reduced list*: the live
events that pass the inclusion filter and lie outside the surviving summaries'
coverage, those summaries, and at read time the covered tool events §8.4 may
restore. :func:`~projections.contents.assembly.build_contents` produces from it
exactly what it produces from the whole session. Coverage only grows while
summaries are appended; a rewind rebuilds the view. Why the reduced list gives
the same contents, and the costs: projections/README.md, "The incremental view".

Example: ``e1@100 e2@101 S[100,101]@102 e3@103`` -> the reduced list
``S e3``, whose contents are the whole session's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from projections.compaction.masking import Coverage, summary_range
from projections.compaction.summary_chain import SummaryChain
from projections.contents.assembly import ContentsRequest, assemble_included
from projections.contents.parts import function_calls, function_responses
from projections.contents.visibility import branch_call_refs, is_included, recorded_call_ids
from projections.event_kinds import is_summary
from projections.retention.released_ids import ReleasedIds
from projections.retention.retained_vector import NeedsHistory
from schemas.event import Content, Event, FunctionCall, FunctionResponse
from schemas.logged_event import LoggedEvent


@dataclass(frozen=True, slots=True)
class ContextView:
    """The reduced list that yields one request's contents.

    Attributes:
        request: The request the view serves (default mode).
        call_ids: Every call id recorded in the live events (§8.2 rule 6).
        awaited_call_ids: Ids named by ``<name>@<id>`` branch segments of live
            events and not recorded as call ids (yet).
        summaries: Included summaries that no included summary contains, and
            the union of their ranges, the *coverage* (inverted and NaN ranges
            cover nothing), kept as summaries arrive
            (:mod:`projections.compaction.summary_chain`).
        raw: Included live raw events outside the coverage, stream order.
        covered_tools: Call or response id -> included covered events that
            call or answer it, in the order they were covered.
        released: The ids of the events retention let go, the released
            covered calls among them (:func:`released_tools`); a read that
            asks for one raises :class:`~projections.retention.retained_vector.NeedsHistory`.
    """

    request: ContentsRequest = field(default_factory=ContentsRequest)
    call_ids: PSet[str] = field(default_factory=pset)
    awaited_call_ids: PSet[str] = field(default_factory=pset)
    summaries: SummaryChain[LoggedEvent] = field(default_factory=SummaryChain)
    raw: PVector[LoggedEvent] = field(default_factory=pvector)
    covered_tools: PMap[str, PVector[LoggedEvent]] = field(default_factory=pmap)
    released: ReleasedIds = field(default_factory=ReleasedIds)

    @property
    def coverage(self) -> Coverage:
        """The union of the surviving summaries' ranges, as disjoint sorted intervals. O(n)."""
        return self.summaries.coverage


def empty_view(request: ContentsRequest) -> ContextView:
    """The view of a session without events.

    Raises:
        ValueError: `request` is not in default mode; ``none`` mode depends on
            where the current turn starts and is computed on demand.
    """
    if request.include_contents != "default":
        raise ValueError(
            f"an incremental view needs include_contents='default', "
            f"got {request.include_contents!r}"
        )
    return ContextView(request)


def rebuild_view(request: ContentsRequest, live: Sequence[LoggedEvent]) -> ContextView:
    """The view of a whole live list, stream order (what a rewind recomputes). O(n)."""
    events = [record.envelope.event for record in live]
    call_ids = recorded_call_ids(events)
    awaited = {ref for event in events for ref in branch_call_refs(event)} - call_ids
    view = replace(empty_view(request), call_ids=pset(call_ids), awaited_call_ids=pset(awaited))
    for record in live:
        view = _place(view, record)
    return view


def note_live_event(
    view: ContextView, record: LoggedEvent, live: Sequence[LoggedEvent]
) -> ContextView:
    """`view` after one more live event.

    Args:
        view: The view before the event.
        record: The event, never a rewind event.
        live: Every live record, `record` last; read only when the event
            records a call id that an earlier branch named.
    """
    event = record.envelope.event
    calls, responses = _function_traffic(event)
    recorded = [call.id for call in calls if call.id]
    awaited = view.awaited_call_ids
    if recorded and awaited and any(call_id in awaited for call_id in recorded):
        return rebuild_view(view.request, live)
    call_ids = view.call_ids
    if recorded:
        unseen = [call_id for call_id in recorded if call_id not in call_ids]
        if unseen:
            call_ids = call_ids.update(unseen)
    if event.branch and "@" in event.branch:
        refs = [ref for ref in branch_call_refs(event) if ref not in call_ids]
        refs = [ref for ref in refs if ref not in awaited]
        if refs:
            awaited = awaited.update(refs)
    return _placed(view, record, call_ids, awaited, calls, responses)


def released_tools(view: ContextView, from_offset: int, released: ReleasedIds) -> ContextView:
    """`view` holding only the covered tool events a read of it, or the tail, can ask for.

    Kept: every id the view's events name, closed under the covered events
    that mention them (a read restores a kept response's call, then that
    call's siblings, :func:`view_events`), and every id with a covered event at
    or after `from_offset` (where retention keeps the log). The other ids join
    `released`, the view's :attr:`ContextView.released`: the fold asks for the
    history when a later event names one (:mod:`projections.retention.release_guard`),
    and a read never does. O(covered tool events).
    """
    return released_tools_of((view,), from_offset, released)[0]


def released_tools_of(
    views: Sequence[ContextView], from_offset: int, released: ReleasedIds
) -> list[ContextView]:
    """:func:`released_tools` for several views of one session, sharing one released set.

    An id any of them keeps is kept by every view that indexes it, so each
    view's released set holds exactly the ids none of them can ask for.
    """
    wanted: set[str] = set()
    for view in views:
        wanted |= _wanted_tools(view, from_offset)
    gone = {mention for view in views for mention in view.covered_tools if mention not in wanted}
    released = released.with_ids(("call", mention) for mention in sorted(gone))
    return [_without_tools(view, gone, released) for view in views]


def _wanted_tools(view: ContextView, from_offset: int) -> set[str]:
    """The ids a read of `view`, or the tail from `from_offset`, can ask for."""
    index = view.covered_tools
    wanted: set[str] = set()
    pending = list(view.raw)
    pending.extend(
        record for held in index.values() for record in held if record.offset >= from_offset
    )
    while pending:
        record = pending.pop()
        calls, responses = _function_traffic(record.envelope.event)
        for mention in [c.id for c in calls] + [r.id for r in responses]:
            if mention and mention not in wanted:
                wanted.add(mention)
                pending.extend(index.get(mention, ()))
    return wanted


def _without_tools(view: ContextView, gone: set[str], released: ReleasedIds) -> ContextView:
    """`view` without the covered tool events of `gone`, its released set `released`."""
    index = view.covered_tools
    dropped = [mention for mention in index if mention in gone]
    if not dropped:
        return replace(view, released=released)
    kept = index.evolver()
    for mention in dropped:
        del kept[mention]
    return replace(view, covered_tools=kept.persistent(), released=released)


def visible_items(view: ContextView) -> int:
    """How many events the view shows at most: its summaries and raw events. O(1).

    What assembling its contents costs, in events. Example: a view of one
    summary and 12 raw events after it -> 13.
    """
    return len(view.summaries) + len(view.raw)


def view_events(view: ContextView) -> list[Event]:
    """The reduced list, stream order: kept raw events, summaries, restorable tool events."""
    restorable: dict[int, LoggedEvent] = {}
    answered = {r.id for record in view.raw for r in function_responses(record.envelope.event)}
    owners = _covered_mentions(view, answered, restorable)
    sibling_ids = {c.id for record in owners for c in function_calls(record.envelope.event)}
    _covered_mentions(view, sibling_ids, restorable)
    records = [*view.raw, *view.summaries, *restorable.values()]
    records.sort(key=lambda record: record.offset)
    return [record.envelope.event for record in records]


def view_contents(view: ContextView) -> list[Content]:
    """The request contents: ``build_contents`` of the reduced list.

    The reduced list passes the first two steps unchanged, so the assembly
    starts at masking (:func:`~projections.contents.assembly.assemble_included`): it
    holds no rewind event (the live list never does), and every event in it
    passes inclusion with the session's recorded call ids (an event that
    stops passing when a later call id is recorded makes the view rebuild:
    :attr:`ContextView.awaited_call_ids`), hence with the fewer ids of the
    list too.
    """
    events = view_events(view)
    return assemble_included(events, view.request, events)


def _covered_mentions(
    view: ContextView, ids: Iterable[str | None], into: dict[int, LoggedEvent]
) -> list[LoggedEvent]:
    """Add to `into` (by offset) the covered events mentioning `ids`; return the new ones."""
    added: list[LoggedEvent] = []
    released = view.released
    for mention in ids:
        if not mention:
            continue
        if released and released.has("call", mention):
            raise NeedsHistory(f"the covered tool events of call {mention!r}")
        for record in view.covered_tools.get(mention, ()):
            if record.offset not in into:
                into[record.offset] = record
                added.append(record)
    return added


def _place(view: ContextView, record: LoggedEvent) -> ContextView:
    """`view` with one more live event placed, call ids already up to date."""
    calls, responses = _function_traffic(record.envelope.event)
    return _placed(view, record, view.call_ids, view.awaited_call_ids, calls, responses)


def _placed(
    view: ContextView,
    record: LoggedEvent,
    call_ids: PSet[str],
    awaited: PSet[str],
    calls: Sequence[FunctionCall],
    responses: Sequence[FunctionResponse],
) -> ContextView:
    """`view` with `call_ids` and `awaited` recorded and one more live event placed.

    `calls` and `responses` are the event's own (:func:`_function_traffic`),
    read once by the caller. The new view is built in one construction.
    """
    event = record.envelope.event
    ids_moved = call_ids is not view.call_ids or awaited is not view.awaited_call_ids
    raw, covered_tools = view.raw, view.covered_tools
    if not is_included(event, view.request, call_ids):
        if not ids_moved:
            return view
    elif is_summary(event):
        if ids_moved:
            view = replace(view, call_ids=call_ids, awaited_call_ids=awaited)
        return _add_summary(view, record)
    elif view.summaries.covers(event.timestamp):
        if calls or responses:
            covered_tools = _index_tools(covered_tools, [record])
    else:
        raw = raw.append(record)
    return ContextView(
        view.request, call_ids, awaited, view.summaries, raw, covered_tools, view.released
    )


def _add_summary(view: ContextView, record: LoggedEvent) -> ContextView:
    """`view` with an included summary: survivors and coverage move, raw events may go.

    O(log survivors) for the survivors (:mod:`projections.compaction.summary_chain`),
    and a walk of the raw events only when the coverage grew: it grew by the
    summary's range alone, so the raw events in that range are the ones it masks.
    """
    start, end = summary_range(record.envelope.event)
    summaries = view.summaries.noted(record, start, end).chain
    if summaries.same_coverage(view.summaries):
        return replace(view, summaries=summaries)
    kept: list[LoggedEvent] = []
    covered: list[LoggedEvent] = []
    for raw in view.raw:
        (covered if start <= raw.envelope.event.timestamp <= end else kept).append(raw)
    if not covered:
        return replace(view, summaries=summaries)
    covered_tools = _index_tools(view.covered_tools, covered)
    return replace(view, summaries=summaries, raw=pvector(kept), covered_tools=covered_tools)


def _index_tools(
    index: PMap[str, PVector[LoggedEvent]], records: Iterable[LoggedEvent]
) -> PMap[str, PVector[LoggedEvent]]:
    """`index` with each of `records` (in order) under each call or response id it mentions.

    One evolver for them all: a summary covers its events at once.
    """
    grown: dict[str, PVector[LoggedEvent]] = {}
    for record in records:
        calls, responses = _function_traffic(record.envelope.event)
        mentions = {c.id for c in calls if c.id}
        mentions.update(r.id for r in responses if r.id)
        for mention in mentions:
            held = grown.get(mention)
            grown[mention] = (index.get(mention, pvector()) if held is None else held).append(
                record
            )
    if not grown:
        return index
    evolver = index.evolver()
    for mention, held in grown.items():
        evolver.set(mention, held)
    return evolver.persistent()


def _function_traffic(event: Event) -> tuple[list[FunctionCall], list[FunctionResponse]]:
    """The event's function calls and responses, in part order, read in one pass.

    The same lists as :func:`~projections.contents.parts.function_calls` and
    :func:`~projections.contents.parts.function_responses`.
    """
    content = event.content
    if content is None or not content.parts:
        return [], []
    calls: list[FunctionCall] = []
    responses: list[FunctionResponse] = []
    for part in content.parts:
        if part.function_call is not None:
            calls.append(part.function_call)
        if part.function_response is not None:
            responses.append(part.function_response)
    return calls, responses
