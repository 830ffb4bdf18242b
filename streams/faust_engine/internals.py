"""Every private name of faust-streaming the faust engine touches, behind typed functions.

faust-streaming 0.15.3 (pinned) has no public way to do these four things;
each function says what it reaches and why, and ``README.md`` beside this file
lists them with the test that guards each. A faust upgrade touches this
module (and :mod:`streams.faust_engine.read_committed`, which subclasses
faust's consumer to read ``read_committed``) and nothing else.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from faust.streams import _current_event
from faust.types import TP


@contextlib.contextmanager
def bound_to(event: Any) -> Iterator[None]:
    """Make `event` faust's current event in this task while the block runs.

    faust routes table reads and writes by the current event's partition
    (``Collection.partition_for_key``, the RocksDB store's ``_set``/``_get``),
    and ``take_events`` fills its buffer in another task, so the agent's
    task has no current event. Binding one of the batch's events of the
    session's partition gives each write the changelog partition and RocksDB
    database of that partition, exactly as a per-event loop would.
    Private: ``faust.streams._current_event`` (no public setter).
    """
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


def changelog_sent_callback(table: Any) -> Callable[..., Any]:
    """The callback ``table[key] = value`` passes with its changelog record.

    It keeps the changelog offset RocksDB's recovery starts from. Private:
    ``Table._on_changelog_sent`` (what ``send_changelog`` passes; no public name).
    """
    callback: Callable[..., Any] = table._on_changelog_sent
    return callback


def reset_read_offset(consumer: Any, tp: TP, offset: int) -> None:
    """Move faust's own read offset of `tp` back to `offset` after a ``seek_wait``.

    faust's fetcher drops records below its read offset as read already; its
    own ``Consumer.seek`` moves that offset back, ``seek_wait`` does not.
    Private: ``Consumer._read_offset`` (no public setter).
    """
    consumer._read_offset[tp] = offset if offset else None


def committed_offset(consumer: Any, tp: TP) -> int | None:
    """Faust's committed offset of `tp`, set when it was assigned.

    Private: ``Consumer._committed_offset`` (no public reader).
    """
    offset: int | None = consumer._committed_offset.get(tp)
    return offset
