"""The compaction requests a worker waits on, and which are due again. No I/O, clock passed in.

A request is re-emitted, with ``attempt + 1`` and the same request id, when
no summary answered it within the timeout: the summarizer may have lost it, or
the projector crashed after recording it but before it reached the topic.
After ``compaction_request_max_attempts`` emissions it is refused instead: the
shell appends a refusal event to `events`, whose fold ends the session's wait,
so the session decides again over a new window rather than waiting forever. A
summarizer that appends twice is harmless: the projection ignores a second
summary for a request a live summary answers.

Attempts and emission times live only in memory. After a restart or a
rebalance the worker learns its in-flight requests again from the table
(``r:`` keys) and starts their timers afresh, so a request is re-emitted at
most one timeout after the worker that owns its session starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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


@dataclass(slots=True)
class Due:
    """What the timer does now: requests to emit again, and requests to refuse."""

    retries: list[CompactionRequest] = field(default_factory=list)
    refused: list[PendingRequest] = field(default_factory=list)


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

    def due(self, now: float, timeout_s: float, max_attempts: int) -> Due:
        """The requests older than `timeout_s`: retried, or refused after `max_attempts`.

        A request emitted fewer than `max_attempts` times is retried with
        ``attempt + 1`` and recorded as emitted at `now`; one emitted
        `max_attempts` times is forgotten and returned as refused (the shell
        appends its refusal to `events`, whose fold ends the session's wait).
        """
        due = Due()
        for key, pending in list(self._by_session.items()):
            if now - pending.emitted_at < timeout_s:
                continue
            if pending.request.attempt >= max_attempts:
                del self._by_session[key]
                due.refused.append(pending)
                continue
            retry = pending.request.model_copy(update={"attempt": pending.request.attempt + 1})
            self._by_session[key] = replace(pending, request=retry, emitted_at=now)
            due.retries.append(retry)
        return due
