"""Context reads of the sessions a native worker owns, answered from committed state.

A read names a session and, for read-your-writes, a ``min_offset``. The
worker owning the session's `events` partition answers it once the
partition's committed state has folded ``min_offset``
(:class:`~streams.reads.gate.ReadGate`), from the session's committed
projection (:class:`CommittedSessions`), in the same synchronous step; a
heavy read runs in a thread of the heavy-read budget
(:mod:`streams.reads.heavy`). Otherwise it comes to :class:`NotOwner`,
:class:`TimedOut`, :class:`Unreadable` or :class:`Busy`. A read never takes
the engine's lock and never writes its state. The steps in full: this
folder's README.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from projections.contents.context_view import visible_items
from projections.fold.projection import SessionProjection
from projections.fold.time_travel import StopCheck, never
from projections.retention.retained_vector import NeedsHistory
from schemas.keys import SessionKey
from schemas.log_text import shown
from streams.reads.gate import ReadGate
from streams.reads.heavy import HeavyReads, OutOfTime
from streams.reads.owners import PartitionOwners

logger = logging.getLogger(__name__)

T = TypeVar("T")

Answer = Callable[[SessionProjection, StopCheck], T]
"""A read's answer of the session's projection; a long one asks the check between records."""

#: How long a refusal may wait to name the partition's owner.
OWNER_LOOKUP_S: Final = 2.0


#: A read of a session whose view shows more events than this is heavy whatever it asks:
#: assembling and encoding tens of thousands of contents takes the loop for a second.
LARGE_VIEW_ITEMS: Final = 2_000


class CommittedSessions(Protocol):
    """What an engine offers reads: its routing and its sessions' committed projections."""

    def partition_of(self, session_key: SessionKey) -> int:
        """The `events` partition of `session_key`, over the engine's partition count."""
        ...

    def committed_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection; valid while the gate says its partition is committed."""
        ...

    async def whole_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection rebuilt from its history on `events`, released nothing."""
        ...

    def first_offset(self, partition: int, session_key: SessionKey) -> int:
        """The offset of the session's first applied record (``-1``: none or not known).

        Valid while the gate says its partition is committed.
        """
        ...


@dataclass(frozen=True, slots=True)
class Answered(Generic[T]):
    """The read's answer."""

    value: T


@dataclass(frozen=True, slots=True)
class NotOwner:
    """This worker does not own the session's partition; `owner` may."""

    partition: int
    owner: str | None


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The partition had not reached the read's ``min_offset`` when its time ran out."""

    partition: int
    position: int | None
    """The next offset the partition's committed state folds; None: not restored yet."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """The session's state could not be read; `reason` says why."""

    partition: int
    reason: str


@dataclass(frozen=True, slots=True)
class Busy:
    """The worker's heavy-read budget stayed full for the read's whole time; `reason` says so."""

    partition: int
    reason: str


ReadOutcome = Answered[T] | NotOwner | TimedOut | Unreadable | Busy
"""What a read comes to."""


class SessionReads:
    """Answers reads of the sessions of the partitions a worker owns."""

    def __init__(
        self,
        gate: ReadGate,
        sessions: CommittedSessions,
        owners: PartitionOwners,
        *,
        worker_id: str,
        heavy: HeavyReads,
    ) -> None:
        """Reads over `sessions`, waiting on `gate`, naming owners from `owners`.

        Heavy answers run within the budget `heavy`.
        """
        self._gate = gate
        self._sessions = sessions
        self._owners = owners
        self._worker_id = worker_id
        self._heavy = heavy

    async def read(
        self,
        session_key: SessionKey,
        answer: Answer[T],
        *,
        heavy: bool = False,
        min_offset: int | None,
        timeout_s: float,
        grows_with_view: bool = True,
    ) -> ReadOutcome[T]:
        """`answer` of the session's committed projection, once its partition is past `min_offset`.

        The projection is taken synchronously, so it is committed state
        only. An ordinary `answer` runs right then, on the loop; a `heavy`
        one (and one that needs the session's history) runs in a thread of
        the heavy-read budget, waiting for a slot within `timeout_s`
        (:class:`Busy` after). An answer that `grows_with_view` is heavy too
        when the session's view is long; one that does not (a duplicate
        lookup) stays on the loop. An exception `answer` raises makes the read
        :class:`Unreadable`.
        """
        partition = self._sessions.partition_of(session_key)
        deadline = time.monotonic() + timeout_s
        while True:
            moved = self._gate.moved(partition)
            state = self._gate.state(partition)
            if state is None:
                return NotOwner(partition, await self._other_owner(partition))
            ready = state.phase == "committed" and (
                min_offset is None or state.position > min_offset
            )
            if ready:
                try:
                    projection: SessionProjection | None
                    projection = self._sessions.committed_projection(partition, session_key)
                    long = grows_with_view and visible_items(projection.view) > LARGE_VIEW_ITEMS
                    if not heavy and long:
                        heavy = True  # a session no summary keeps short: its contents are long
                    if not heavy:
                        try:
                            return Answered(answer(projection, never))
                        except NeedsHistory:
                            projection = None  # what the projection released is needed
                    return await self._heavy_answer(
                        partition, session_key, answer, projection, deadline
                    )
                except Exception as exc:  # noqa: BLE001 - one session's failure answers its read
                    reason = f"{type(exc).__name__}: {shown(str(exc), 500)}"
                    logger.warning(
                        "read failed session=%s partition=%d reason=%s",
                        shown(session_key),
                        partition,
                        reason,
                    )
                    return Unreadable(partition, reason)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                committed = state.position if state.phase != "restoring" else None
                return TimedOut(partition, committed)
            try:
                await asyncio.wait_for(moved.wait(), remaining)
            except TimeoutError:
                continue  # one more look: the deadline has passed

    def first_offset(self, session_key: SessionKey) -> int:
        """The session's first applied offset (``-1``: none or not known).

        Committed state only when called from an ordinary (not heavy)
        :meth:`read`'s answer, which runs in the step that took the projection.
        """
        return self._sessions.first_offset(self._sessions.partition_of(session_key), session_key)

    async def _heavy_answer(
        self,
        partition: int,
        session_key: SessionKey,
        answer: Answer[T],
        projection: SessionProjection | None,
        deadline: float,
    ) -> Answered[T] | Busy:
        """`answer` in a thread of the budget: of `projection`, else of the session's history."""
        started = time.monotonic()
        wait_s = deadline - started
        label = f"session={session_key} partition={partition}"
        slots = (
            f"the worker's {self._heavy.budget} heavy-read slots (as_of, rewind-delta, "
            "history reads; CTXSTREAM_HEAVY_READS)"
        )
        async with self._heavy.admitted(wait_s, label) as slot:
            if slot is None:
                return Busy(partition, f"{slots} stayed busy for the read's {max(wait_s, 0):.3g} s")
            waited_s = time.monotonic() - started
            try:
                if projection is not None:
                    taken = projection
                    try:
                        return Answered(
                            await slot.run(lambda stop: answer(taken, stop), deadline=deadline)
                        )
                    except NeedsHistory:
                        pass  # what the projection released is needed: from the history
                whole = await self._sessions.whole_projection(partition, session_key)
                return Answered(await slot.run(lambda stop: answer(whole, stop), deadline=deadline))
            except OutOfTime:
                return Busy(
                    partition,
                    f"the read did not end within its {max(wait_s, 0):.3g} s: it waited "
                    f"{waited_s:.3g} s for one of {slots}, which take turns; "
                    "ask again, or with a longer timeout_s",
                )

    async def _other_owner(self, partition: int) -> str | None:
        """The address of the partition's newest claimant when it is another worker."""
        try:
            await asyncio.wait_for(self._owners.refresh(), OWNER_LOOKUP_S)
        except Exception as exc:  # noqa: BLE001 - the refusal goes out without the owner then
            logger.warning("owner lookup failed partition=%d reason=%s", partition, exc)
        claim = self._owners.owner(partition)
        if claim is None or claim.worker_id == self._worker_id:
            return None
        return claim.address
