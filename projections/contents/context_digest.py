"""The context fingerprint kept as the view grows, without assembling the whole context. Pure.

The fingerprint is SHA-256 of the canonical JSON of the assembled contents
(:func:`canonical_contents`). SHA-256 reads its input in order, so a
:class:`ContextDigest` keeps the hash state after the contents of a *settled*
reduced list and feeds a copy only what new events add, whenever the longer
list's contents are the settled ones followed by the new events' alone
(:func:`_extends`); anything else assembles the whole context once. Why an
accepted extension assembles that way, step by step: projections/README.md,
"The context digest".

Example: settled ``user "q"``, ``agent "a"`` (the state fed ``[`` and their two
contents), then ``user "q2"`` at a later timestamp -> a copy of that state is
fed ``,`` and the one new content, not the whole context again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from pydantic import TypeAdapter

from projections.contents.assembly import ContentsRequest, assemble_included
from projections.contents.context_view import ContextView, view_events
from projections.contents.parts import function_calls, function_responses
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


@dataclass(frozen=True, slots=True)
class ContextDigest:
    """The fingerprint's state after the contents of a settled reduced list.

    Attributes:
        request: The request the list was assembled for.
        events: The list, stream order (the projection's own event objects, so
            comparing a list with it is mostly identity checks).
        items: How many contents it assembles to.
        state: SHA-256 fed ``[`` and those contents, comma separated.
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
    """The view's context as the snapshot reports it, and the digest to pass next time.

    Attributes:
        items: How many contents the context has.
        fingerprint: Their fingerprint (:func:`projections.contents.snapshot.context_fingerprint`).
        digest: The state to hand to the next :func:`digest_context` of this
            session's view, None when the list cannot be settled.
    """

    items: int
    fingerprint: str
    digest: ContextDigest | None


def digest_context(view: ContextView, previous: ContextDigest | None = None) -> DigestedContext:
    """The count and fingerprint of the view's contents, from `previous` where it still holds.

    Equal to counting and fingerprinting :func:`~projections.contents.context_view.view_contents`
    whatever `previous` is (an older digest of the session, another session's, None):
    it is used only when the view's reduced list starts with the very events it was
    made from.
    """
    events = tuple(view_events(view))
    if (
        previous is not None
        and previous.request == view.request
        and events[: len(previous.events)] == previous.events
    ):
        tail = events[len(previous.events) :]
        named = _extends(previous, tail)
        if named is not None:
            state, items = _fed(previous.state.copy(), previous.items, tail, view.request)
            digest: ContextDigest | None = previous
            if tail and _is_settled(events):
                newest = max(previous.newest_timestamp, _newest_timestamp(tail))
                digest = ContextDigest(
                    view.request, events, items, state.copy(), previous.named_ids | named, newest
                )
            return DigestedContext(items, _finished(state), digest)
    state, items = _fed(hashlib.sha256(b"["), 0, events, view.request)
    settled = _settled(view.request, events, state, items)
    return DigestedContext(items, _finished(state), settled)


def _fed(
    state: HashState, items: int, events: Sequence[Event], request: ContentsRequest
) -> tuple[HashState, int]:
    """`state` fed the contents `events` assemble to, after `items` contents already fed."""
    if not events:
        return state, items
    for piece in canonical_contents(assemble_included(events, request, events)):
        if items:
            state.update(b",")
        state.update(piece)
        items += 1
    return state, items


def _finished(state: HashState) -> str:
    closed = state.copy()
    closed.update(b"]")
    return closed.hexdigest()


def _settled(
    request: ContentsRequest, events: tuple[Event, ...], state: HashState, items: int
) -> ContextDigest | None:
    """The digest of a whole list just fed to `state`, when the list can be settled."""
    if request.isolation_scope is not None or not _is_settled(events):
        return None
    newest = _newest_timestamp(events)
    if not math.isfinite(newest):
        return None
    named = frozenset(mention for event in events for mention in _mentions(event) if mention)
    return ContextDigest(request, events, items, state.copy(), named, newest)


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


def _extends(previous: ContextDigest, tail: Sequence[Event]) -> frozenset[str] | None:
    """The ids `tail` names, when it assembles after `previous`'s list alone; None otherwise."""
    named: set[str] = set()
    # Strictly after the settled list: a summary covers both ends of its range, so an event at
    # the newest summary end could be a covered tool event that a read restores.
    floor, newest = previous.newest_timestamp, -math.inf
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
            if not mention or mention in previous.named_ids:
                return None
            named.add(mention)
    return frozenset(named)


def _mentions(event: Event) -> list[str | None]:
    """The ids of the event's function calls and responses, in part order."""
    return [call.id for call in function_calls(event)] + [
        response.id for response in function_responses(event)
    ]
