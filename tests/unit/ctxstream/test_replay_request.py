"""The arguments of ``Client.replay`` and what ``ctxstream replay`` draws and prints. Pure.

Refusals happen at the call, before anything connects.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest

from ctxstream import InvalidArgumentError, PartitionProgress, ReplayProgress, ReplayReport
from ctxstream.cli.replay import BAR_WIDTH, ProgressBar, parse_time, summary
from ctxstream.replay_request import ReplayRequest, replay_request
from ctxstream.subscription_request import FromOffsets, FromTime
from schemas.keys import SessionKey

LIVE = "ctxstream"


def test_the_defaults_replay_every_session_from_the_beginning() -> None:
    assert replay_request("rebuilt", live_prefix=LIVE) == ReplayRequest(
        "rebuilt", None, FromOffsets({}, otherwise=0)
    )


def test_sessions_of_any_tenant_an_offset_and_a_time_are_kept() -> None:
    keys = ["acme/a/u/s", "globex/b/u/s"]
    request = replay_request("rebuilt", live_prefix=LIVE, sessions=keys, from_offset={1: 5})
    assert request.sessions == frozenset(SessionKey(key) for key in keys)
    assert request.start == FromOffsets({1: 5}, otherwise=0)
    at = datetime(2025, 1, 31, 12, tzinfo=UTC)
    assert replay_request("rebuilt", live_prefix=LIVE, from_time=at).start == FromTime(
        int(at.timestamp() * 1000)
    )


@pytest.mark.parametrize(
    ("arguments", "pattern"),
    [
        ({"target_prefix": LIVE}, r"^target_prefix: 'ctxstream' is the live deployment's own"),
        ({"target_prefix": ""}, r"^target_prefix: '' is not a topic prefix"),
        ({"target_prefix": "a b"}, r"^target_prefix: 'a b' is not a topic prefix"),
        ({"target_prefix": "x" * 101}, r"^target_prefix: .* is not a topic prefix"),
        ({"target_prefix": 3}, r"^target_prefix: expected a string, got int"),
        ({"sessions": "acme/a/u/s"}, r"^sessions: expected a collection"),
        ({"sessions": []}, r"^sessions: empty"),
        ({"sessions": ["acme/a/u/s", "acme/../u/s"]}, r"^sessions\[1\]: "),
        ({"from_offset": 1, "from_time": 1.0}, r"^from_offset, from_time: give one of them"),
        ({"from_offset": -1}, r"^from_offset: -1 is negative"),
        ({"from_time": datetime(2025, 1, 31)}, r"^from_time: a naive datetime"),  # noqa: DTZ001
    ],
)
def test_each_refusal_names_its_argument(arguments: dict[str, Any], pattern: str) -> None:
    given = {"target_prefix": "rebuilt", **arguments}
    with pytest.raises(InvalidArgumentError, match=pattern):
        replay_request(live_prefix=LIVE, **given)


def test_the_bar_draws_in_place_skips_redraws_too_close_and_always_draws_the_end() -> None:
    out = io.StringIO()
    bar = ProgressBar(out, terminal=True)

    def at(*positions: int) -> ReplayProgress:
        return ReplayProgress({n: PartitionProgress(0, 10, p) for n, p in enumerate(positions)})

    bar.draw(at(0, 0))
    bar.draw(at(5, 0))  # within REDRAW_S of the first: not drawn
    bar.draw(at(10, 10))
    bar.close()

    empty, full = "-" * BAR_WIDTH, "#" * BAR_WIDTH
    assert out.getvalue() == f"\r[{empty}]   0%  0/20 offsets\r[{full}] 100%  20/20 offsets\n"


def test_off_a_terminal_the_bar_is_one_line_at_the_end_without_carriage_returns() -> None:
    out = io.StringIO()  # not a terminal
    bar = ProgressBar(out)

    def at(*positions: int) -> ReplayProgress:
        return ReplayProgress({n: PartitionProgress(0, 10, p) for n, p in enumerate(positions)})

    bar.draw(at(0, 0))
    bar.draw(at(5, 5))
    bar.draw(at(10, 10))
    bar.close()

    assert out.getvalue() == f"[{'#' * BAR_WIDTH}] 100%  20/20 offsets\n"


def test_a_bar_never_drawn_ends_no_line() -> None:
    out = io.StringIO()
    ProgressBar(out).close()
    assert out.getvalue() == ""


def test_the_summary_line_and_the_time_argument() -> None:
    report = ReplayReport("rebuilt", 3, 120, 130, 9, 2, 1, 1.234)
    assert summary(report) == (
        "replayed 3 sessions, 120 records into rebuilt.projections in 1.23 s "
        "(9 snapshots, 2 compaction requests, 1 dead letter)"
    )
    one = ReplayReport("rebuilt", 1, 1, 1, 1, 1, 0, 0.5)
    assert summary(one) == (
        "replayed 1 session, 1 record into rebuilt.projections in 0.50 s "
        "(1 snapshot, 1 compaction request, 0 dead letters)"
    )
    assert parse_time("1738324800.5") == 1738324800.5
    assert parse_time("2025-01-31T12:00:00+00:00") == datetime(2025, 1, 31, 12, tzinfo=UTC)
    with pytest.raises(InvalidArgumentError, match=r"^from_time: 'yesterday' is neither"):
        parse_time("yesterday")
