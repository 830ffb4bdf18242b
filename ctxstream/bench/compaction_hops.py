"""Where the time of one compaction goes: its hops, from the points the benchmark saw. Pure.

A compaction passes a chain of *points*, each a wall-clock time (seconds) that
``ctxstream bench compaction`` notes for each request: when the deciding
event's append began and when the broker acknowledged it (the benchmark's
producer), the timing stamps the workers put on the request, the summary and
the snapshot (:mod:`schemas.kafka.timing`), each record's own timestamp
(CreateTime: when its worker sent it inside its transaction), and when the
benchmark's ``read_committed`` follower saw each record. A *hop* is the time
between two consecutive points; the hops of a request add up to its latency.

Example: a request with ``append_began`` 10.000 and ``append_acked`` 10.004
has an ``append`` hop of 4 ms; with ``snapshot_seen`` 10.080 its latency is
80 ms, of which that hop is a 5% share.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Final

from ctxstream.bench.report import percentile

#: The points of one compaction, in the order it passes them.
POINTS: Final = (
    "append_began",
    "append_acked",
    "request_taken",
    "request_sent",
    "request_seen",
    "summary_taken",
    "summary_read",
    "summary_built",
    "summary_sent",
    "summary_seen",
    "snapshot_taken",
    "snapshot_sent",
    "snapshot_seen",
)


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop: from point `start` to point `end`, and what is done or waited for in it."""

    name: str
    start: str
    end: str
    what: str


HOPS: Final = (
    Hop("append", "append_began", "append_acked", "the append, until the broker acknowledged it"),
    Hop(
        "projector_wait",
        "append_acked",
        "request_taken",
        "the deciding event in the log until the projector took it in a batch (its fetch, "
        "the batch before being folded and committed)",
    ),
    Hop(
        "projector_fold",
        "request_taken",
        "request_sent",
        "the projector folding that batch, until the request was sent in its transaction",
    ),
    Hop(
        "projector_commit",
        "request_sent",
        "request_seen",
        "the rest of the projector's transaction (changelog, snapshots, offsets, commit) "
        "until the request is readable",
    ),
    Hop(
        "summarizer_wait",
        "request_seen",
        "summary_taken",
        "the committed request until the summarizer's consumer returned it",
    ),
    Hop(
        "summarizer_read",
        "summary_taken",
        "summary_read",
        "the session's turn, a read slot and the read of its slice of events",
    ),
    Hop(
        "summarizer_work",
        "summary_read",
        "summary_built",
        "checking the request, summarizing, building the summary event",
    ),
    Hop(
        "summarizer_lane",
        "summary_built",
        "summary_sent",
        "the summary waiting for its partition's next transaction",
    ),
    Hop(
        "summarizer_commit",
        "summary_sent",
        "summary_seen",
        "the summarizer's transaction (offsets, commit) until the summary is readable",
    ),
    Hop(
        "fold_wait",
        "summary_seen",
        "snapshot_taken",
        "the committed summary until the projector took it in a batch",
    ),
    Hop(
        "fold",
        "snapshot_taken",
        "snapshot_sent",
        "the projector folding that batch, until the snapshot was sent in its transaction",
    ),
    Hop(
        "snapshot_commit",
        "snapshot_sent",
        "snapshot_seen",
        "the rest of that transaction and the snapshot's delivery to the reader",
    ),
)

#: The share of the requests, the slowest, whose hops `tail_share` describes (at least one).
TAIL: Final = 0.1


@dataclass(frozen=True, slots=True)
class HopFigures:
    """One hop over the requests it was measured for (both its points seen).

    Attributes:
        p50_ms: Median.
        p99_ms: 99th percentile (nearest rank).
        share: The hop's part of the latency: its total over the total
            latency of the same requests.
        tail_share: The same over the slowest tenth of the requests (by
            latency, at least one, rounded down): where the time of the high
            percentiles goes.
        requests: Requests measured.
    """

    p50_ms: float
    p99_ms: float
    share: float
    tail_share: float
    requests: int


Points = Mapping[str, float]
"""One request's points: point name -> wall-clock seconds."""


def latency_s(points: Points) -> float | None:
    """From the first point to the last (the request's latency), if both were seen."""
    first, last = points.get(POINTS[0]), points.get(POINTS[-1])
    return None if first is None or last is None else last - first


def hop_figures(requests: Mapping[str, Points]) -> dict[str, HopFigures]:
    """Each hop's figures over `requests` (request id -> its points), in the chain's order.

    Only requests whose latency is known count; a hop with no request that
    has both its points is left out (the faust engine stamps nothing, say).
    """
    latencies = {rid: s for rid, points in requests.items() if (s := latency_s(points)) is not None}
    if not latencies:
        return {}
    ranked = sorted(latencies, key=latencies.__getitem__, reverse=True)
    slowest = set(ranked[: max(1, int(len(ranked) * TAIL))])
    figures: dict[str, HopFigures] = {}
    for hop in HOPS:
        spans = {
            rid: requests[rid][hop.end] - requests[rid][hop.start]
            for rid in latencies
            if hop.start in requests[rid] and hop.end in requests[rid]
        }
        if not spans:
            continue
        figures[hop.name] = HopFigures(
            p50_ms=round(percentile(list(spans.values()), 0.5) * 1000, 3),
            p99_ms=round(percentile(list(spans.values()), 0.99) * 1000, 3),
            share=_share(spans, latencies, spans.keys()),
            tail_share=_share(spans, latencies, slowest & spans.keys()),
            requests=len(spans),
        )
    return figures


def _share(
    spans: Mapping[str, float], latencies: Mapping[str, float], ids: AbstractSet[str]
) -> float:
    """The spans of `ids` over their latencies."""
    chosen = [rid for rid in latencies if rid in ids]
    total = sum(latencies[rid] for rid in chosen)
    return round(sum(spans[rid] for rid in chosen) / total, 4) if total > 0 else 0.0


def hop_lines(figures: Mapping[str, HopFigures]) -> str:
    """The hops as text, one line each: median, p99, share of the latency, share in the tail."""
    return "".join(
        f"  hop={name} p50_ms={hop.p50_ms} p99_ms={hop.p99_ms} "
        f"share={hop.share:.1%} tail_share={hop.tail_share:.1%}\n"
        for name, hop in figures.items()
    )
