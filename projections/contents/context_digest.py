"""The context fingerprint kept as the view grows, without assembling the whole context. Pure.

The fingerprint is SHA-256 of the SHA-256 digests of the assembled contents, one per content,
each of its canonical JSON (:func:`canonical_contents`), concatenated in order. Three savings
follow, each exact:

* a content's digest is computed once: :class:`ContentPieces` keeps it for the event it was
  copied from, and an assembly that meets the same event object again reuses it;
* a :class:`ContextDigest` keeps the digests of a *settled* reduced list, so a list that only
  grew assembles the new events alone (:func:`~projections.contents.context_settling.extends`);
* it also keeps the list's *cuts*, where its contents split into a settled part and the rest
  assembled alone, so after a summary only the summary's side is assembled and the events the
  summary leaves shown reuse their digests (:func:`_after_summary`).

Anything else assembles the whole context once. Why each holds, step by step:
projections/README.md, "The context digest".

Example: settled ``user "q"``, ``agent "a"`` (their two content digests kept), then
``user "q2"`` at a later timestamp -> one new content's digest appended, not the whole context
serialized again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from pydantic import TypeAdapter

from projections.compaction.masking import mask_compacted
from projections.contents.assembly import ContentsRequest, paired_included
from projections.contents.context_settling import (
    cut_points,
    extends,
    is_settled,
    last_plain,
    named_ids_of,
    newest_timestamp,
)
from projections.contents.context_view import ContextView, view_events
from projections.contents.parts import function_calls, function_responses
from projections.contents.request_contents import request_content, task_input_content
from projections.event_kinds import is_summary
from schemas.event import Content, Event

#: Dumps a whole list of contents in one call, each exactly as
#: :func:`~schemas.event.content_to_json` dumps it (the same serializer).
_CONTENTS: Final = TypeAdapter(list[Content])

#: Bytes of one content's digest (SHA-256).
DIGEST_BYTES: Final = 32

#: Fewest events between two cuts a whole assembly keeps: after a summary, at most about
#: this many events beside the summary are assembled again.
_CUT_GAP: Final = 2


def canonical_contents(contents: Sequence[Content]) -> list[bytes]:
    """Each content's canonical JSON, UTF-8: the pieces the fingerprint hashes.

    Canonical: genai's camelCase JSON of the content, keys sorted, compact
    separators, non-ASCII kept.
    """
    dumped = _CONTENTS.dump_python(list(contents), mode="json", by_alias=True, exclude_none=True)
    return [
        json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        for item in dumped
    ]


def content_digests(contents: Sequence[Content]) -> list[bytes]:
    """The SHA-256 digest of each content's canonical JSON: what the fingerprint hashes."""
    return [hashlib.sha256(piece).digest() for piece in canonical_contents(contents)]


@dataclass(frozen=True, slots=True)
class ContentPieces:
    """The content digest of each event an assembly copied a request content from.

    A request content is a function of the event object alone (and of whether
    client call ids are kept), so the digest is looked up by the event's
    identity; each entry holds its event, so the identity stays its own.

    Attributes:
        preserve_function_call_ids: The request option the digests were made under.
        by_event: ``id(event) -> (event, content digest)``.
    """

    preserve_function_call_ids: bool
    by_event: dict[int, tuple[Event, bytes]] = field(compare=False)


@dataclass(frozen=True, slots=True)
class ContextDigest:
    """The contents' digests of a settled reduced list, and where the list splits.

    Attributes:
        request: The request the list was assembled for.
        events: The list, stream order (the projection's own event objects, so
            comparing a list with it is mostly identity checks).
        digests: The digest of each content it assembles to, concatenated in order.
        named_ids: Every call and response id the list names.
        newest_timestamp: The greatest timestamp of the list, summary ends included.
        cuts: ``(events, items)`` pairs, rising: the list's first `events` events
            are settled and assemble to its first `items` contents, and the
            events after them assemble alone to the rest.
    """

    request: ContentsRequest
    events: tuple[Event, ...]
    digests: bytes = field(repr=False)
    named_ids: frozenset[str]
    newest_timestamp: float
    cuts: tuple[tuple[int, int], ...] = ()

    @property
    def items(self) -> int:
        """How many contents the list assembles to."""
        return len(self.digests) // DIGEST_BYTES


@dataclass(frozen=True, slots=True)
class DigestedContext:
    """The view's context as the snapshot reports it, and what to pass next time.

    Attributes:
        items: How many contents the context has.
        fingerprint: Their fingerprint (:func:`projections.contents.snapshot.context_fingerprint`).
        digest: The digest to hand to the next :func:`digest_context` of this
            session's view, None when no list of it could be settled.
        pieces: The content digests to hand with it: those of this context's
            events (and of the events before, while the list only grew).
    """

    items: int
    fingerprint: str
    digest: ContextDigest | None
    pieces: ContentPieces


def digest_context(
    view: ContextView,
    previous: ContextDigest | None = None,
    pieces: ContentPieces | None = None,
) -> DigestedContext:
    """The count and fingerprint of the view's contents, from `previous` where it still holds.

    Equal to counting and fingerprinting :func:`~projections.contents.context_view.view_contents`
    whatever `previous` and `pieces` are (an older digest of the session, another session's,
    None): `previous` is used only for runs of the very events it was made from, and `pieces`
    only for the very event objects it names.
    """
    request = view.request
    events = tuple(view_events(view))
    known = _known(pieces, request)
    if previous is not None and previous.request == request:
        if events[: len(previous.events)] == previous.events:
            tail = events[len(previous.events) :]
            if extends(previous.newest_timestamp, previous.named_ids, tail) is not None:
                fed = _Feed(bytearray(previous.digests), known, dict(known.by_event))
                return fed.context(_fed_settling(fed, previous, events, request))
        elif (shown := _after_summary(previous, events, known)) is not None:
            return shown
    fed = _Feed(bytearray(), known, {})
    if request.isolation_scope is not None:  # §8.9: a scoped agent's task goes first
        task = task_input_content(events, request.isolation_scope)
        if task is not None:
            fed.digests += content_digests([task])[0]
        fed.feed(events, request)
        return fed.context(None)
    cuts = cut_points(events, _CUT_GAP)
    if not cuts:
        fed.feed(events, request)
        return fed.context(None)
    # Settled up to the last cut, assembled a part at a time so that each cut is kept with the
    # contents before it; what follows the last cut (tool traffic) is its extension.
    marks: list[tuple[int, int]] = []
    done = 0
    for cut in cuts:
        fed.feed(events[done:cut], request)
        marks.append((cut, fed.items))
        done = cut
    head = events[:done]
    digest = ContextDigest(
        request,
        head,
        bytes(fed.digests),
        named_ids_of(head),
        newest_timestamp(head),
        tuple(marks),
    )
    fed.feed(events[done:], request)
    return fed.context(digest)


def _known(pieces: ContentPieces | None, request: ContentsRequest) -> ContentPieces:
    """`pieces` when made under `request`'s option, else none."""
    keep = request.preserve_function_call_ids
    if pieces is None or pieces.preserve_function_call_ids != keep:
        return ContentPieces(keep, {})
    return pieces


@dataclass(slots=True)
class _Feed:
    """Content digests being gathered in order, and the per-event digests the gathering used.

    Attributes:
        digests: The digests so far, concatenated.
        known: The per-event digests to reuse.
        used: ``id(event) -> (event, digest)`` of the events fed (and any kept on).
    """

    digests: bytearray
    known: ContentPieces
    used: dict[int, tuple[Event, bytes]]

    @property
    def items(self) -> int:
        """Contents gathered so far."""
        return len(self.digests) // DIGEST_BYTES

    def feed(self, events: Sequence[Event], request: ContentsRequest) -> None:
        """Append the digests of the contents `events` assemble to, assembled alone."""
        if not events:
            return
        paired = [event for event in paired_included(events, request) if event.content is not None]
        by_event = self.known.by_event
        missing = [
            event
            for event in paired
            if (hit := by_event.get(id(event))) is None or hit[0] is not event
        ]
        keep = request.preserve_function_call_ids
        made = content_digests(
            [
                request_content(event.content, preserve_function_call_ids=keep)
                for event in missing
                if event.content is not None
            ]
        )
        fresh = {id(event): (event, digest) for event, digest in zip(missing, made, strict=True)}
        for event in paired:
            entry = fresh.get(id(event)) or by_event[id(event)]
            self.used[id(event)] = entry
            self.digests += entry[1]

    def settled(
        self,
        request: ContentsRequest,
        events: tuple[Event, ...],
        named_ids: frozenset[str],
        floor: float,
        cuts: tuple[tuple[int, int], ...],
    ) -> ContextDigest:
        """The digest of `events`, settled, whose contents are all gathered so far."""
        return ContextDigest(
            request,
            events,
            bytes(self.digests),
            named_ids,
            floor,
            (*cuts, (len(events), self.items)),
        )

    def context(self, digest: ContextDigest | None) -> DigestedContext:
        """The context gathered, with `digest` to pass on."""
        fingerprint = hashlib.sha256(self.digests).hexdigest()
        pieces = ContentPieces(self.known.preserve_function_call_ids, self.used)
        return DigestedContext(self.items, fingerprint, digest, pieces)


def _fed_settling(
    fed: _Feed, previous: ContextDigest, events: tuple[Event, ...], request: ContentsRequest
) -> ContextDigest | None:
    """`fed` (at `previous`) fed the rest of `events`, which extends it; the digest to keep.

    The whole list when it settles; else the list up to its last plain event,
    when what follows that event extends it in turn; else `previous`. Every cut
    of `previous` stays a cut: what follows it still assembles alone.
    """
    start = len(previous.events)
    tail = events[start:]
    if not tail:
        return previous
    split = last_plain(events, start)
    if start < split < len(events):
        head = tail[: split - start]
        floor = max(previous.newest_timestamp, newest_timestamp(head))
        named_ids = previous.named_ids | named_ids_of(head)
        if extends(floor, named_ids, events[split:]) is not None:
            fed.feed(head, request)
            digest = fed.settled(request, events[:split], named_ids, floor, previous.cuts)
            fed.feed(events[split:], request)
            return digest
    fed.feed(tail, request)
    if not is_settled(events):
        return previous
    floor = max(previous.newest_timestamp, newest_timestamp(tail))
    named_ids = previous.named_ids | named_ids_of(tail)
    return fed.settled(request, events, named_ids, floor, previous.cuts)


def _after_summary(
    previous: ContextDigest, events: tuple[Event, ...], known: ContentPieces
) -> DigestedContext | None:
    """The context of `events` reusing the part of `previous` a new summary left shown.

    `events` must hold, as one run in stream order, the events after one of
    `previous`'s cuts (the *kept* run, which assembles alone to the digests
    after the cut). The rest splits into the *head*, the events before the run
    and every summary after it, and the *tail*, the other events after it. When
    the head holds a summary, ends (after masking's sort by timestamp) with an
    event without calls or responses, is older than the kept run and names none
    of its ids, and the tail extends head and run together, masking's sort puts
    head, run and tail in that order, each assembles alone, and the contents are
    the head's, the kept digests and the tail's (a head without a summary is
    not sorted, and comes first in stream order). None when it does not apply.
    """
    request = previous.request
    position = {id(event): index for index, event in enumerate(events)}
    for cut, items in previous.cuts:
        kept = previous.events[cut:]
        start = position.get(id(kept[0])) if kept else None
        if start is None or events[start : start + len(kept)] != kept:
            continue  # the summary covers part of this run: try the run after the next cut
        after = events[start + len(kept) :]
        head = (*events[:start], *(event for event in after if is_summary(event)))
        tail = tuple(event for event in after if not is_summary(event))
        newest = _shown_newest(head)
        if not newest < kept[0].timestamp:  # also refuses NaN
            continue  # a later run may start after this head's newest timestamp
        named_ids = named_ids_of(head) | named_ids_of(kept)
        floor = max(newest, kept[-1].timestamp)
        if not _ends_apart(head, kept, request) or extends(floor, named_ids, tail) is None:
            return None
        fed = _Feed(bytearray(), known, dict(known.by_event))
        fed.feed(head, request)
        fed.digests += previous.digests[items * DIGEST_BYTES :]
        if events[len(events) - len(tail) :] != tail:  # a summary among the tail's events
            fed.feed(tail, request)
            return fed.context(previous)
        # Head and run, settled in all but order: the tail extends them as it would a list.
        shown = events[: len(events) - len(tail)]
        base = ContextDigest(
            request, shown, bytes(fed.digests), named_ids, floor, ((len(shown), fed.items),)
        )
        return fed.context(_fed_settling(fed, base, events, request))
    return None


def _ends_apart(head: tuple[Event, ...], kept: tuple[Event, ...], request: ContentsRequest) -> bool:
    """Whether `head`, older than the `kept` run, assembles alone before it.

    Under the views' own rules this never refuses (a cut's run names no id the
    list before it names, and that list ends plain and newest); it stays so that
    a list no view makes still gets the whole assembly.
    """
    if named_ids_of(head) & named_ids_of(kept):
        return False
    masked = mask_compacted(head, request.agent_name)
    return not masked or (not function_calls(masked[-1]) and not function_responses(masked[-1]))


def _shown_newest(events: Sequence[Event]) -> float:
    """The newest timestamp masking shows or covers: raw events' own, summaries' range ends.

    A summary shows at its end and hides what its range covers; its own
    timestamp places nothing. NaN if any of these is NaN.
    """
    newest = -math.inf
    for event in events:
        compaction = event.actions.compaction
        stamps = (
            (event.timestamp,)
            if compaction is None
            else (compaction.start_timestamp, compaction.end_timestamp)
        )
        for stamp in stamps:
            if math.isnan(stamp):
                return math.nan
            newest = max(newest, stamp)
    return newest
