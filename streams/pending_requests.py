"""The compaction requests a worker waits on, and which are due again. No I/O, clock passed in.

A request is re-emitted, with ``attempt + 1`` and the same request id, when
no summary answered it within the timeout: the summarizer may have lost it, or
the projector crashed after recording it but before it reached the topic. A
summarizer that appends twice is harmless: the projection ignores a second
summary for a request a live summary answers.

Attempts and emission times live only in memory. After a restart or a
rebalance the worker learns its in-flight requests again from the table
(``r:`` keys) and starts their timers afresh, so a request is re-emitted at
most one timeout after the worker that owns its session starts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from schemas.compaction_request import CompactionRequest
from schemas.keys import SessionKey


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """One in-flight request of a session this worker owns.

    Attributes:
        request: The request as last emitted (its attempt).
        partition: The session's `events` partition.
        emitted_at: Wall-clock seconds of the last emission (or of learning it).
    """

    request: CompactionRequest
    partition: int
    emitted_at: float


class PendingRequests:
    """In-flight requests by session, with their emission times."""

    def __init__(self) -> None:
        self._by_session: dict[SessionKey, PendingRequest] = {}

    def __len__(self) -> int:
        return len(self._by_session)

    def emitted(self, request: CompactionRequest, partition: int, now: float) -> None:
        """Remember `request`, just emitted."""
        self._by_session[request.session_key] = PendingRequest(request, partition, now)

    def learned(self, request: CompactionRequest, partition: int, now: float) -> None:
        """Remember `request`, read back from the table, unless it is known already."""
        if request.session_key not in self._by_session:
            self._by_session[request.session_key] = PendingRequest(request, partition, now)

    def answered(self, session_key: SessionKey) -> None:
        """Forget the session's request: a summary answered it."""
        self._by_session.pop(session_key, None)

    def revoked(self, partitions: set[int]) -> None:
        """Forget the requests of sessions in partitions this worker no longer owns."""
        self._by_session = {
            key: pending
            for key, pending in self._by_session.items()
            if pending.partition not in partitions
        }

    def due(self, now: float, timeout_s: float) -> list[CompactionRequest]:
        """The retries of requests older than `timeout_s`, each with ``attempt + 1``.

        They are recorded as emitted at `now`.
        """
        retries: list[CompactionRequest] = []
        for key, pending in list(self._by_session.items()):
            if now - pending.emitted_at < timeout_s:
                continue
            retry = pending.request.model_copy(update={"attempt": pending.request.attempt + 1})
            self._by_session[key] = replace(pending, request=retry, emitted_at=now)
            retries.append(retry)
        return retries
