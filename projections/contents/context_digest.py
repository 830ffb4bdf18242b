"""The context fingerprint kept as the view grows, without assembling the whole context. Pure.

The fingerprint is SHA-256 of the SHA-256 digests of the assembled contents, one per content,
each of its canonical JSON (:func:`canonical_contents`), concatenated in order. So a content's
digest is computed once: :class:`ContentPieces` keeps it for the event it was copied from, and
an assembly that meets the same event object again reuses it (the summary that changes the
start of the context re-runs the assembly's list steps, not its serialization). And SHA-256 reads
its input in order, so a :class:`ContextDigest` keeps the hash state after the contents of a
*settled* reduced list and feeds a copy only what new events add, whenever the longer list's
contents are the settled ones followed by the new events' alone (:func:`_extends`); anything else
assembles the whole context once. Why an accepted extension assembles that way, step by step:
projections/README.md, "The context digest".

Example: settled ``user "q"``, ``agent "a"`` (the state fed their two content digests), then
``user "q2"`` at a later timestamp -> a copy of that state is fed the one new content's digest,
not the whole context again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from pydantic import TypeAdapter

from projections.contents.assembly import ContentsRequest, paired_included
from projections.contents.context_view import ContextView, view_events
from projections.contents.parts import function_calls, function_responses
from projections.contents.request_contents import request_content, task_input_content
from projections.event_kinds import is_summary
from schemas.event import Content, Event

#: Dumps a whole list of contents in one call, each exactly as
#: :func:`~schemas.event.content_to_json` dumps it (the same serializer).
_CONTENTS: Final = TypeAdapter(list[Content])


class HashState(Protocol):
    """A running SHA-256 (``hashlib.sha256()``): fed in order, copied to branch off."""

    def update(self, data: bytes, /) -> None:
        """Feed `data`."""

    def copy(self) -> HashState:
        """An independent state equal to this one."""

    def hexdigest(self) -> str:
        """The digest of what was fed, in hex."""


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
    """The fingerprint's state after the contents of a settled reduced list.

    Attributes:
        request: The request the list was assembled for.
        events: The list, stream order (the projection's own event objects, so
            comparing a list with it is mostly identity checks).
        items: How many contents it assembles to.
        state: SHA-256 fed the digests of those contents, in order.
        named_ids: Every call and response id the list names.
        newest_timestamp: The greatest timestamp of the list, summary ends included.
    """

    request: ContentsRequest
    events: tuple[Event, ...]
    items: int
    state: HashState = field(compare=False)
    named_ids: frozenset[str]
    newest_timestamp: float


@dataclass(frozen=True, slots=True)
class DigestedContext:
    """The view's context as the snapshot reports it, and what to pass next time.

    Attributes:
        items: How many contents the context has.
        fingerprint: Their fingerprint (:func:`projections.contents.snapshot.context_fingerprint`).
        digest: The state to hand to the next :func:`digest_context` of this
            session's view, None when the list cannot be settled.
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
    None): `previous` is used only when the view's reduced list starts with the very events
    it was made from, and `pieces` only for the very event objects it names.
    """
    request = view.request
    events = tuple(view_events(view))
    known = _known(pieces, request)
    if (
        previous is not None
        and previous.request == request
        and events[: len(previous.events)] == previous.events
    ):
        tail = events[len(previous.events) :]
        named = _extends(previous.newest_timestamp, previous.named_ids, tail)
        if named is not None:
            fed = _Feed(previous.state.copy(), previous.items, known, dict(known.by_event))
            digest = _fed_settling(fed, previous, events, request)
            return DigestedContext(fed.items, fed.state.hexdigest(), digest, fed.pieces())
    fed = _Feed(hashlib.sha256(), 0, known, {})
    if request.isolation_scope is not None:  # §8.9: a scoped agent's task goes first
        task = task_input_content(events, request.isolation_scope)
        if task is not None:
            fed.add(content_digests([task])[0])
        fed.feed(events, request)
        return DigestedContext(fed.items, fed.state.hexdigest(), None, fed.pieces())
    split = _last_plain(events, 0)
    if split < len(events):
        head = events[:split]
        floor, named_ids = _newest_timestamp(head), _named(head)
        if (
            _is_settled(head)
            and math.isfinite(floor)
            and _extends(floor, named_ids, events[split:]) is not None
        ):
            # Settled up to the last plain event; the tool traffic after it is its extension.
            fed.feed(head, request)
            digest = ContextDigest(request, head, fed.items, fed.state.copy(), named_ids, floor)
            fed.feed(events[split:], request)
            return DigestedContext(fed.items, fed.state.hexdigest(), digest, fed.pieces())
    fed.feed(events, request)
    settled = _settled(request, events, fed.state, fed.items)
    return DigestedContext(fed.items, fed.state.hexdigest(), settled, fed.pieces())


def _fed_settling(
    fed: _Feed, previous: ContextDigest, events: tuple[Event, ...], request: ContentsRequest
) -> ContextDigest | None:
    """`fed` (at `previous`) fed the rest of `events`, which extends it; the digest to keep.

    The whole list when it settles; else the list up to its last plain event,
    when what follows that event extends it in turn; else `previous`.
    """
    start = len(previous.events)
    tail = events[start:]
    if not tail:
        return previous
    split = _last_plain(events, start)
    if split < len(events) and split > start:
        head = tail[: split - start]
        floor = max(previous.newest_timestamp, _newest_timestamp(head))
        named_ids = previous.named_ids | _named(head)
        if _extends(floor, named_ids, events[split:]) is not None:
            fed.feed(head, request)
            digest = ContextDigest(
                request, events[:split], fed.items, fed.state.copy(), named_ids, floor
            )
            fed.feed(events[split:], request)
            return digest
    fed.feed(tail, request)
    if not _is_settled(events):
        return previous
    floor = max(previous.newest_timestamp, _newest_timestamp(tail))
    named_ids = previous.named_ids | _named(tail)
    return ContextDigest(request, events, fed.items, fed.state.copy(), named_ids, floor)


def _last_plain(events: Sequence[Event], start: int) -> int:
    """One past the last event from `start` on without calls or responses (`start`: none)."""
    for position in range(len(events), start, -1):
        last = events[position - 1]
        if not function_calls(last) and not function_responses(last):
            return position
    return start


def _named(events: Sequence[Event]) -> frozenset[str]:
    """Every call and response id `events` name."""
    return frozenset(mention for event in events for mention in _mentions(event) if mention)


def _known(pieces: ContentPieces | None, request: ContentsRequest) -> ContentPieces:
    """`pieces` when made under `request`'s option, else none."""
    keep = request.preserve_function_call_ids
    if pieces is None or pieces.preserve_function_call_ids != keep:
        return ContentPieces(keep, {})
    return pieces


@dataclass(slots=True)
class _Feed:
    """A hash state being fed content digests, and the digests the feeding used.

    Attributes:
        state: SHA-256 fed so far.
        items: Contents fed so far.
        known: The digests to reuse.
        used: ``id(event) -> (event, digest)`` of the events fed (and any kept on).
    """

    state: HashState
    items: int
    known: ContentPieces
    used: dict[int, tuple[Event, bytes]]

    def add(self, digest: bytes) -> None:
        """Feed one content's digest."""
        self.state.update(digest)
        self.items += 1

    def feed(self, events: Sequence[Event], request: ContentsRequest) -> None:
        """Feed the digests of the contents `events` assemble to, assembled alone."""
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
            self.add(entry[1])

    def pieces(self) -> ContentPieces:
        """The digests to keep for the next assembly."""
        return ContentPieces(self.known.preserve_function_call_ids, self.used)


def _settled(
    request: ContentsRequest, events: tuple[Event, ...], state: HashState, items: int
) -> ContextDigest | None:
    """The digest of a whole list just fed to `state`, when the list can be settled."""
    if request.isolation_scope is not None or not _is_settled(events):
        return None
    newest = _newest_timestamp(events)
    if not math.isfinite(newest):
        return None
    return ContextDigest(request, events, items, state.copy(), _named(events), newest)


def _is_settled(events: Sequence[Event]) -> bool:
    """Whether the list may be settled: its last event, masked or not, has no calls or responses.

    The latest-response rearrangement reads the newest event of the masked
    list only; once events follow, it no longer applies to this list's, so
    it must be a no-op already: that event holds no response. Masking sorts
    by timestamp when a summary is present, so the last event must also be
    the newest (and not a summary, which shows at its end timestamp). Nor may
    it hold a call: its answer, which usually follows, names a settled id and
    would make the next snapshot assemble everything again. (Calls left
    unanswered further back settle as they are: a tail may not answer them.)
    """
    if not events:
        return True
    last = events[-1]
    return (
        not function_calls(last)
        and not function_responses(last)
        and not is_summary(last)
        and last.timestamp >= _newest_timestamp(events[:-1])  # also refuses NaN
    )


def _newest_timestamp(events: Sequence[Event]) -> float:
    """The greatest timestamp in `events`, summary ends included (NaN if any is NaN)."""
    newest = -math.inf
    for event in events:
        stamps = [event.timestamp]
        compaction = event.actions.compaction
        if compaction is not None:
            stamps.extend((compaction.start_timestamp, compaction.end_timestamp))
        for stamp in stamps:
            if math.isnan(stamp):
                return math.nan
            newest = max(newest, stamp)
    return newest


def _extends(
    floor: float, named_ids: frozenset[str], tail: Sequence[Event]
) -> frozenset[str] | None:
    """The ids `tail` names, when it assembles alone after a settled list; None otherwise.

    `floor` and `named_ids` are the settled list's newest timestamp and the ids it names.
    """
    named: set[str] = set()
    # Strictly after the settled list: a summary covers both ends of its range, so an event at
    # the newest summary end could be a covered tool event that a read restores.
    newest = -math.inf
    for event in tail:
        if (
            is_summary(event)
            or event.input_transcription is not None
            or event.output_transcription is not None
            or event.long_running_tool_ids
            or not event.timestamp > floor  # also refuses NaN
            or event.timestamp < newest
        ):
            return None
        newest = event.timestamp
        for mention in _mentions(event):
            if not mention or mention in named_ids:
                return None
            named.add(mention)
    return frozenset(named)


def _mentions(event: Event) -> list[str | None]:
    """The ids of the event's function calls and responses, in part order."""
    return [call.id for call in function_calls(event)] + [
        response.id for response in function_responses(event)
    ]
