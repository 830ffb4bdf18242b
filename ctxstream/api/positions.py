"""Where an HTTP subscription stands: the next offset of every partition, as one SSE event id. Pure.

A server-sent event's ``id`` is what an SSE client sends back as
``Last-Event-ID`` when it reconnects, so each snapshot's id is the whole
position of the subscription after it: the next offset of every partition of
the `projections` topic, ``<partition>:<offset>`` joined by ``,`` in partition
order. Partitions are read in order, so resuming from the id of an event
yields exactly the events that came after it: none twice, none missed.

Example, `projections` with 3 partitions, a snapshot read at partition 1,
offset 41::

    id: 0:17,1:42,2:0

More in ``ctxstream/api/README.md`` (positions.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, TypeAlias

from ctxstream.errors import InvalidArgumentError
from schemas.json_bounds import INT64_MAX

Position: TypeAlias = dict[int, int]
"""The next offset to read, by partition."""

#: Partitions a position may name (the deployment's settings allow no more).
MAX_PARTITIONS: Final = 10_000
_ENTRY: Final = re.compile(r"([0-9]{1,5}):([0-9]{1,19})")  # ASCII digits only


def format_position(position: Mapping[int, int]) -> str:
    """The SSE id of `position`: ``p:o`` pairs by partition, comma-separated."""
    return ",".join(f"{partition}:{position[partition]}" for partition in sorted(position))


def parse_start(text: str, *, name: str) -> int | Position:
    """A start a caller wrote: one offset for every partition (``0``) or a position.

    Raises:
        InvalidArgumentError: Neither; the message starts with `name`.
    """
    if text.isascii() and text.isdigit():
        offset = int(text)
        if offset > INT64_MAX:
            raise InvalidArgumentError(f"{name}: {offset} is past any offset")
        return offset
    return parse_position(text, name=name)


def parse_position(text: str, *, name: str) -> Position:
    """The position an SSE id (:func:`format_position`) names.

    Raises:
        InvalidArgumentError: It is not one; the message starts with `name`.
    """
    entries = text.split(",")
    if len(entries) > MAX_PARTITIONS:
        raise InvalidArgumentError(f"{name}: more than {MAX_PARTITIONS} partitions")
    position: Position = {}
    for entry in entries:
        matched = _ENTRY.fullmatch(entry)
        if matched is None:
            raise InvalidArgumentError(
                f"{name}: expected <partition>:<offset> pairs separated by ',', e.g. 0:17,1:42"
            )
        partition, offset = int(matched.group(1)), int(matched.group(2))
        if partition in position:
            raise InvalidArgumentError(f"{name}: partition {partition} is named twice")
        if offset > INT64_MAX:
            raise InvalidArgumentError(f"{name}: offset {offset} is past any offset")
        position[partition] = offset
    return position


def start_offsets(
    start: int | Mapping[int, int] | None,
    beginnings: Mapping[int, int],
    ends: Mapping[int, int],
    *,
    name: str,
) -> Position:
    """The offset each partition is read from, for a subscription asked to start at `start`.

    `start` None: each partition's end. An int: that offset of every
    partition. A mapping: its offset of each partition it names, the
    beginning of the others. Each is held between the partition's beginning
    and its end.

    Example, beginnings ``{0: 0, 1: 5}``, ends ``{0: 10, 1: 20}``::

        None          -> {0: 10, 1: 20}
        7             -> {0: 7, 1: 7}
        {0: 30}       -> {0: 10, 1: 5}     (0: past its end; 1: not named)

    Raises:
        InvalidArgumentError: The mapping names a partition the topic does not
            have; the message starts with `name`.
    """
    if start is None:
        return dict(ends)
    if isinstance(start, int):
        wanted = dict.fromkeys(ends, start)
    else:
        unknown = sorted(set(start) - set(ends))
        if unknown:
            raise InvalidArgumentError(
                f"{name}: partition {unknown[0]} is not one of the topic's {len(ends)} partitions"
            )
        wanted = {partition: start.get(partition, 0) for partition in ends}
    return {
        partition: min(ends[partition], max(beginnings[partition], offset))
        for partition, offset in wanted.items()
    }
