"""The live summaries a projection tracks: the compaction boundary and applied requests. Pure.

The *boundary* is the latest surviving summary of the live, unscoped events
(reference §3.2), the one the token trigger rolls forward. The *applied
requests* are the compaction request ids live summaries carry
(:func:`~projections.event_kinds.summary_request_id`): a summary naming one of
them is a duplicate, which the fold ignores. A rewind that annuls a summary
frees its request id, so the same window can be summarized again, as a full
rebuild decides (:mod:`projections.fold.rebuild`). Memory: the surviving
summaries and one entry per live summary that names a request. A summary costs
O(log survivors) when its range ends above every earlier one
(:mod:`projections.compaction.summary_chain`).

Example: ``S1(r1)`` then ``S2(r1)`` -> ``S2`` is a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyrsistent import PMap, pmap

from projections.compaction.masking import summary_range
from projections.compaction.summary_chain import SummaryChain
from projections.event_kinds import is_summary, summary_request_id
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent


@dataclass(frozen=True, slots=True)
class SummaryLedger:
    """Surviving unscoped summaries and the requests live summaries answer.

    Attributes:
        survivors: Unscoped live summaries whose range no other unscoped live
            summary contains, by start (its `newest` is the latest in stream
            order).
        request_ids: Compaction request id -> offset of the live summary (any
            scope) that answers it.
    """

    survivors: SummaryChain[LoggedEvent] = field(default_factory=SummaryChain)
    request_ids: PMap[str, Offset] = field(default_factory=pmap)

    @property
    def boundary(self) -> LoggedEvent | None:
        """The latest surviving unscoped summary, None when there is none."""
        return self.survivors.newest

    def answers(self, request_id: str) -> bool:
        """Whether a live summary already answers `request_id`."""
        return request_id in self.request_ids


def is_duplicate_summary(ledger: SummaryLedger, record: LoggedEvent) -> bool:
    """Whether `record` is a summary for a request a live summary already answers."""
    request_id = summary_request_id(record.envelope.event)
    return request_id is not None and ledger.answers(request_id)


def note_summary(ledger: SummaryLedger, record: LoggedEvent) -> SummaryLedger:
    """`ledger` after one more live summary (not a duplicate).

    The survivors among the old survivors plus the new summary are the
    survivors among all summaries: a summary contained in a non-survivor is
    contained in that non-survivor's container too. O(log survivors) for a
    summary that ends above every earlier one.

    Example: survivors ``[100, 103]``; new ``[100, 108]`` -> ``[100, 108]``
    alone; new ``[102, 108]`` instead -> both.
    """
    event = record.envelope.event
    request_ids = ledger.request_ids
    request_id = summary_request_id(event)
    if request_id is not None:
        request_ids = request_ids.set(request_id, record.offset)
    survivors = ledger.survivors
    if event.isolation_scope is None:
        start, end = summary_range(event)
        survivors = survivors.noted(record, start, end).chain
    return SummaryLedger(survivors, request_ids)


def summary_ledger(live: Iterable[LoggedEvent]) -> SummaryLedger:
    """The ledger of a whole live list, stream order (what a rewind recomputes)."""
    ledger = SummaryLedger()
    for record in live:
        if is_summary(record.envelope.event):
            ledger = note_summary(ledger, record)
    return ledger
