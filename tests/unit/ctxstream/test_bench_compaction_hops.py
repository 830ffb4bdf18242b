"""The compaction benchmark's hops: consecutive points, figures over the requests that have them."""

from __future__ import annotations

from ctxstream.bench.compaction_hops import HOPS, POINTS, hop_figures, hop_lines, latency_s


def _points(start: float, spans_ms: list[float]) -> dict[str, float]:
    """A request whose consecutive points are `spans_ms` apart."""
    points = {POINTS[0]: start}
    at = start
    for name, span in zip(POINTS[1:], spans_ms, strict=True):
        at += span / 1000
        points[name] = at
    return points


def test_the_hops_chain_every_point_once_so_they_add_up_to_the_latency() -> None:
    assert [hop.start for hop in HOPS] == list(POINTS[:-1])
    assert [hop.end for hop in HOPS] == list(POINTS[1:])
    assert len({hop.name for hop in HOPS}) == len(HOPS)


def test_figures_per_hop_from_hand_made_requests() -> None:
    twelve = len(POINTS) - 1
    # Ten requests of 12 hops of 1 ms, and one whose append took 89 ms more (the slowest
    # tenth: 1 of 11 requests).
    requests = {f"r{n}": _points(100.0 + n, [1.0] * twelve) for n in range(10)}
    requests["slow"] = _points(200.0, [90.0] + [1.0] * (twelve - 1))
    assert latency_s(requests["slow"]) is not None
    figures = hop_figures(requests)
    assert list(figures) == [hop.name for hop in HOPS]
    append, fold = figures["append"], figures["fold"]
    assert (append.p50_ms, append.p99_ms, append.requests) == (1.0, 90.0, 11)
    assert (fold.p50_ms, fold.p99_ms) == (1.0, 1.0)
    # All latencies: 10 x 12 ms + 101 ms = 221 ms, of which the append is 10 + 90 = 100 ms.
    assert append.share == round(100 / 221, 4)
    assert fold.share == round(11 / 221, 4)
    # The slowest tenth is the slow request alone: 90 of its 101 ms are the append.
    assert append.tail_share == round(90 / 101, 4)
    assert fold.tail_share == round(1 / 101, 4)
    assert "hop=append p50_ms=1.0 p99_ms=90.0 share=45.2% tail_share=89.1%" in hop_lines(figures)


def test_a_hop_without_both_points_is_left_out_and_an_unfinished_request_counts_nowhere() -> None:
    stamped = _points(10.0, [2.0] * (len(POINTS) - 1))
    unstamped = _points(20.0, [4.0] * (len(POINTS) - 1))
    del unstamped["request_taken"]  # an engine that stamps nothing: two hops unknown
    unfinished = {k: v for k, v in stamped.items() if k != "snapshot_seen"}
    figures = hop_figures({"a": stamped, "b": unstamped, "c": unfinished})
    assert figures["projector_wait"].requests == 1
    assert figures["projector_wait"].p99_ms == 2.0
    assert figures["append"].requests == 2
    assert figures["append"].p99_ms == 4.0
    assert hop_figures({"c": unfinished}) == {}
    assert hop_figures({}) == {}
