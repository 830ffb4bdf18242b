"""The conditional-record rule, written out plainly for tests (never the fold's code).

design25.md §1: a conditional record (``expected_offset`` set) applies only if
the session's last WRITER record is at that offset (``-1``: none, or deleted
since). A writer record is an applied record that is none of: a pipeline
summary (it names a compaction request), a refusal, a fork record, a deletion,
a memory record, a partial event, an equal re-delivery, a refused
conditional record. A deletion resets the writer offset to ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.event import Event
from schemas.logged_event import LoggedEvent


def _ours(event: Event) -> dict[str, object]:
    metadata = event.custom_metadata or {}
    ours = metadata.get("ctxstream")
    return ours if isinstance(ours, dict) else {}


def _is_bookkeeping(event: Event) -> bool:
    """A refusal, fork, deletion or memory record, by the keys the pipeline writes."""
    ours = _ours(event)
    if event.content is None and event.actions.compaction is None and "compaction_refused" in ours:
        return True
    return any(key in ours for key in ("fork_of", "session_deleted", "memory"))


@dataclass
class WriterOracle:
    """Feed a session's records in order; it says which conditional records were refused."""

    writer: int = -1
    refused: list[int] = field(default_factory=list)
    last: int | None = None
    seen: dict[str, Event] = field(default_factory=dict)

    def feed(self, record: LoggedEvent) -> bool | None:
        """Fold `record`: None if redelivered, False if refused, True otherwise."""
        if self.last is not None and record.offset <= self.last:
            return None
        self.last = record.offset
        event = record.envelope.event
        wanted = record.envelope.expected_offset
        if wanted is not None and record.origin_offset is None and wanted != self.writer:
            self.refused.append(record.offset)
            return False
        if "session_deleted" in _ours(event):
            self.writer, self.seen = -1, {}
            return True
        if _is_bookkeeping(event) or event.partial:
            return True
        copy = bool(event.id) and self.seen.get(event.id) == event
        if event.id and not copy:
            self.seen[event.id] = event
        pipeline_summary = event.actions.compaction is not None and bool(
            _ours(event).get("compaction_request_id")
        )
        if not copy and not pipeline_summary and record.origin_offset is None:
            self.writer = record.offset
        return True
