"""When a reduced list's contents split in two, each part assembled alone. Pure.

The context digest (:mod:`projections.contents.context_digest`) reuses what an
earlier assembly made only where the assembly of the whole list is the assembly
of its parts, one after the other. These are the rules that say so: a list is
*settled* (:func:`is_settled`) when whatever extends it leaves its contents a
prefix, and a run of events *extends* a settled list (:func:`extends`) when it
assembles alone after it. Why each rule holds, step by step: projections/README.md,
"The context digest".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from projections.contents.parts import function_calls, function_responses
from projections.event_kinds import is_summary
from schemas.event import Event


def is_settled(events: Sequence[Event]) -> bool:
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
        and last.timestamp >= newest_timestamp(events[:-1])  # also refuses NaN
    )


def newest_timestamp(events: Sequence[Event]) -> float:
    """The greatest timestamp in `events`, summary ends included (NaN if any is NaN)."""
    newest = -math.inf
    for event in events:
        newest = max_stamp(newest, event)
        if math.isnan(newest):
            return newest
    return newest


def extends(
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
        for mention in mentions(event):
            if not mention or mention in named_ids:
                return None
            named.add(mention)
    return frozenset(named)


def mentions(event: Event) -> list[str | None]:
    """The ids of the event's function calls and responses, in part order."""
    return [call.id for call in function_calls(event)] + [
        response.id for response in function_responses(event)
    ]


def last_plain(events: Sequence[Event], start: int) -> int:
    """One past the last event from `start` on without calls or responses (`start`: none)."""
    for position in range(len(events), start, -1):
        last = events[position - 1]
        if not function_calls(last) and not function_responses(last):
            return position
    return start


def named_ids_of(events: Sequence[Event]) -> frozenset[str]:
    """Every call and response id `events` name."""
    return frozenset(mention for event in events for mention in mentions(event) if mention)


def cut_points(events: Sequence[Event], gap: int) -> list[int]:
    """Where `events` split into a settled list and a run that extends it, at least `gap` apart.

    A cut ``c`` qualifies when ``events[:c]`` is settled (:func:`is_settled`,
    with a finite newest timestamp) and ``events[c:]`` extends it
    (:func:`extends`); ``len(events)`` qualifies when the whole list is settled.
    Of the qualifying cuts, rising, each kept is at least `gap` events after the
    one kept before it, and the last qualifying cut is always kept. O(len(events)).
    """
    size = len(events)
    # newest[c]: the newest timestamp of events[:c] (NaN once any is NaN).
    newest = [-math.inf] * (size + 1)
    for index, event in enumerate(events):
        newest[index + 1] = max_stamp(newest[index], event)
    # clean_from[c]: events[c:] could extend anything (no summary, transcription or
    # long-running tool, ids all given, timestamps rising).
    clean_from = [False] * (size + 1)
    clean_from[size] = True
    for index in range(size - 1, -1, -1):
        event = events[index]
        clean_from[index] = (
            clean_from[index + 1]
            and _may_extend(event)
            and (index + 1 == size or event.timestamp <= events[index + 1].timestamp)
        )
    # blocked[c] > 0: some id is named both before c and from c on.
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for index, event in enumerate(events):
        for mention in mentions(event):
            if mention:
                first.setdefault(mention, index)
                last[mention] = index
    change = [0] * (size + 2)
    for mention, start in first.items():
        change[start + 1] += 1
        change[last[mention] + 1] -= 1
    qualifying: list[int] = []
    blocked = 0
    for cut in range(1, size + 1):
        blocked += change[cut]
        before = events[cut - 1]
        if (
            blocked == 0
            and clean_from[cut]
            and math.isfinite(newest[cut])
            and not function_calls(before)
            and not function_responses(before)
            and not is_summary(before)
            and before.timestamp >= newest[cut - 1]
            and (cut == size or events[cut].timestamp > newest[cut])
        ):
            qualifying.append(cut)
    cuts: list[int] = []
    for cut in qualifying:
        if not cuts or cut - cuts[-1] >= gap:
            cuts.append(cut)
    if cuts and cuts[-1] != qualifying[-1]:
        cuts[-1] = qualifying[-1]
    return cuts


def max_stamp(newest: float, event: Event) -> float:
    """`newest` or the event's timestamp or summary ends, the greatest (NaN if any is NaN)."""
    compaction = event.actions.compaction
    stamps = (
        (event.timestamp,)
        if compaction is None
        else (event.timestamp, compaction.start_timestamp, compaction.end_timestamp)
    )
    for stamp in stamps:
        if math.isnan(stamp) or math.isnan(newest):
            return math.nan
        newest = max(newest, stamp)
    return newest


def _may_extend(event: Event) -> bool:
    """Whether `event` may be part of an extension: see :func:`extends`."""
    return (
        not is_summary(event)
        and event.input_transcription is None
        and event.output_transcription is None
        and not event.long_running_tool_ids
        and all(mentions(event))
    )
