"""A batch's rows given their statuses, with every earlier row's status the batch changes.

Per session, in offset order, :func:`~projections.history.incremental.advance` folds each new
record into the session's state (from the cache when it ends at the session's last stored row,
else rebuilt from its stored rows) and says which statuses it set: the new rows get theirs
before they are written, the earlier rows whose status ends the batch different are updated
after. The states are returned, not cached: the caller caches them once the transaction
commits. The memory plan rides along
(:mod:`streams.sink.read_model.batch_memories`). Design: ``streams/sink/README.md``, "Statuses".
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from streams.sink.read_model.batch_memories import MemoryApps, MemoryPlan
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.stored_history import last_offsets, rebuilt_states
from streams.sink.rows import EventRow

#: A row's place: (partition, offset).
RowPlace = tuple[int, int]


@dataclass(slots=True)
class ClassifiedBatch:
    """What a batch writes besides its offsets.

    Attributes:
        rows: The batch's rows, each with its status at the end of the batch.
        updates: Earlier rows whose status the batch changed: place -> new status.
        owners: The session of each place in `updates`.
        before_deletion: Earlier rows the batch made ``deleted`` after changing their status:
            place -> the status they had before the deletion (for the others, the stored one).
        states: Session key -> (partition, state after the batch), to cache after commit.
        memories: The memories to add and remove.
    """

    rows: list[EventRow] = field(default_factory=list)
    updates: dict[RowPlace, EventStatus] = field(default_factory=dict)
    owners: dict[RowPlace, str] = field(default_factory=dict)
    before_deletion: dict[RowPlace, EventStatus] = field(default_factory=dict)
    states: dict[str, tuple[int, HistoryState]] = field(default_factory=dict)
    memories: MemoryPlan = field(default_factory=lambda: MemoryPlan(MemoryApps()))


def status_at(state: HistoryState | None, offset: int) -> EventStatus | None:
    """The status `state` gives the applied record at `offset`; None for any other."""
    if state is None:
        return None
    position = bisect_left(state.applied, offset, key=lambda facts: facts.offset)
    if position < len(state.applied) and state.applied[position].offset == offset:
        return state.statuses[position]
    return None


async def classify_batch(
    conn: Connection,
    schema: str,
    cache: HistoryCache,
    rows: Sequence[EventRow],
    events: Sequence[LoggedEvent],
    memory: MemoryPlan,
) -> ClassifiedBatch:
    """The batch's rows with statuses, the earlier rows' changes and the states after it.

    Runs in the batch's transaction, after the fence locked the partitions (a cache miss
    reads the session's stored rows). `memory` is filled for the apps it feeds.
    """
    sessions: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        sessions.setdefault(row.session_key, []).append(index)
    result = ClassifiedBatch(memories=memory)
    final: dict[int, EventStatus] = {}
    final_before: dict[int, EventStatus] = {}
    befores = await _states_before(conn, schema, cache, rows, sessions)
    for session_key, indexes in sessions.items():
        indexes.sort(key=lambda index: rows[index].offset)
        partition = rows[indexes[0]].partition
        before = befores.get(session_key)
        state, first_new = before, rows[indexes[0]].offset
        earlier: dict[int, EventStatus] = {}
        before_deletion: dict[int, EventStatus] = {}
        by_offset = {rows[index].offset: index for index in indexes}
        for index in indexes:
            after, changes = advance(state, rows[index].offset, events[index].envelope)
            state = after
            for offset, status in changes:
                latest = (
                    final.get(by_offset[offset]) if offset >= first_new else earlier.get(offset)
                )
                if status is EventStatus.DELETED and latest is not None:
                    before_deletion[offset] = latest
                if offset >= first_new:
                    final[by_offset[offset]] = status
                else:
                    earlier[offset] = status
        for deleted_at, prior in before_deletion.items():
            if deleted_at >= first_new:
                final_before[by_offset[deleted_at]] = prior
            else:
                result.before_deletion[(partition, deleted_at)] = prior
        if state is not None:
            result.states[session_key] = (partition, state)
        for earlier_offset, new_status in earlier.items():
            old = status_at(before, earlier_offset)
            if new_status is not old:
                result.updates[(partition, earlier_offset)] = new_status
                result.owners[(partition, earlier_offset)] = session_key
                memory.note_change(session_key, partition, earlier_offset, old, new_status)
        for index in indexes:
            memory.note_new(events[index], partition, final[index])
    result.rows = [
        row.with_status(str(final[index]), status_text(final_before.get(index)))
        for index, row in enumerate(rows)
    ]
    return result


def status_text(status: EventStatus | None) -> str | None:
    """`status` as stored; None as NULL."""
    return None if status is None else str(status)


async def _states_before(
    conn: Connection,
    schema: str,
    cache: HistoryCache,
    rows: Sequence[EventRow],
    sessions: dict[str, list[int]],
) -> dict[str, HistoryState]:
    """Each session's state before the batch (none for a session without rows).

    The cached state when it ends at the session's highest stored offset (else rows were
    written after it), else rebuilt from the rows: the misses all in one read.
    """
    stored_last = await last_offsets(conn, schema, list(sessions))
    states: dict[str, HistoryState] = {}
    missed: list[str] = []
    for session_key, indexes in sessions.items():
        if session_key not in stored_last:
            continue  # a new session: no state yet
        cached = cache.get(session_key, rows[indexes[0]].partition)
        if cached is not None and cached.last_offset == stored_last[session_key]:
            states[session_key] = cached
        else:
            missed.append(session_key)
    states.update(await rebuilt_states(conn, schema, missed))
    return states
