"""``ctxstream up``'s status line (printed when it changed, else once a minute) and banner."""

from __future__ import annotations

from ctxstream.cli.up import metrics_line
from ctxstream.cli.up_status import QUIET_REPEAT_S, Status, StatusCadence


def test_an_unchanged_line_is_printed_again_only_once_a_minute() -> None:
    cadence = StatusCadence()
    idle = Status(0.0, 0, 3, 1).line()

    printed = [now for now in range(0, 181, 3) if cadence.due(idle, float(now))]

    assert QUIET_REPEAT_S == 60.0
    assert printed == [0, 60, 120, 180]


def test_a_changed_line_is_printed_at_once_and_restarts_the_quiet_minute() -> None:
    cadence = StatusCadence(quiet_s=60.0)
    assert cadence.due(Status(0.0, 0, 1, 0).line(), 0.0)
    assert not cadence.due(Status(0.0, 0, 1, 0).line(), 3.0)
    assert cadence.due(Status(4.0, 2, 1, 0).line(), 6.0)
    assert cadence.due(Status(0.0, 0, 1, 0).line(), 9.0)  # back to the old line: a change too
    assert not cadence.due(Status(0.0, 0, 1, 0).line(), 66.0)
    assert cadence.due(Status(0.0, 0, 1, 0).line(), 69.0)


def test_the_line_says_one_session_and_one_compaction_in_the_singular() -> None:
    assert Status(1.5, 0, 1, 1).line() == "status: 1.5 events/s, lag 0, 1 session, 1 compaction"
    assert Status(0.0, 3, 2, 0).line() == "status: 0.0 events/s, lag 3, 2 sessions, 0 compactions"


def test_the_banner_names_the_metrics_url_when_a_port_is_set_and_how_to_set_one_when_not() -> None:
    assert metrics_line(19066, "127.0.0.1") == (
        "  metrics     http://127.0.0.1:19066/metrics   (the projector's)"
    )
    assert "CTXSTREAM_METRICS_PORT=<port>" in metrics_line(0, "127.0.0.1")
