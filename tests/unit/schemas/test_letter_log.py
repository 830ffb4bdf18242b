"""LetterLog: the first dead letter of a session and stage is logged, the rest counted."""

from __future__ import annotations

import logging

import pytest

from schemas.dead_letter import DeadLetter, build_dead_letter
from schemas.letter_log import LetterLog

LOGGER = "test.letter_log"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _letter(key: bytes | None, stage: str = "session-size", offset: int = 0) -> DeadLetter:
    return build_dead_letter(
        reason=f"why {offset}",
        stage=stage,
        source_topic="events",
        source_partition=1,
        source_offset=offset,
        key=key,
        value=b"{}",
    )


def _letter_log(caplog: pytest.LogCaptureFixture, clock: Clock, **options: float) -> LetterLog:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return LetterLog(logging.getLogger(LOGGER), clock=clock, **options)  # type: ignore[arg-type]


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_the_first_letter_of_a_pair_is_logged_and_the_rest_counted_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    letters = _letter_log(caplog, clock, interval_s=60.0)
    for offset in range(1_000):
        letters.letter(_letter(b"t/a/u/s", offset=offset))
    assert _lines(caplog) == [
        "dead letter topic=events partition=1 offset=0 stage=session-size reason=why 0"
    ]
    clock.now += 60.0
    letters.letter(_letter(b"t/a/u/s", offset=1_000))
    assert _lines(caplog)[1:] == [
        "1000 more dead letters session=t/a/u/s stage=session-size in the last 60 s"
    ]


def test_another_stage_or_session_is_a_pair_of_its_own(caplog: pytest.LogCaptureFixture) -> None:
    letters = _letter_log(caplog, Clock())
    letters.letter(_letter(b"t/a/u/s"))
    letters.letter(_letter(b"t/a/u/s", stage="fold"))
    letters.letter(_letter(b"t/a/u/other"))
    letters.letter(_letter(None, stage="decode"))
    letters.letter(_letter(b"t/a/u/s"))
    assert len(_lines(caplog)) == 4
    assert len(letters) == 4


def test_a_sweep_reports_counts_of_letters_that_stopped_coming(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    letters = _letter_log(caplog, clock, interval_s=10.0)
    for offset in range(3):
        letters.letter(_letter(b"t/a/u/s", offset=offset))
    letters.sweep()
    assert len(_lines(caplog)) == 1  # not due yet
    clock.now += 10.0
    letters.sweep()
    letters.sweep()
    assert _lines(caplog)[1:] == [
        "2 more dead letters session=t/a/u/s stage=session-size in the last 10 s"
    ]


def test_pairs_are_bounded_and_one_leaving_reports_its_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    letters = _letter_log(caplog, Clock(), max_pairs=2)
    letters.letter(_letter(b"t/a/u/1"))
    letters.letter(_letter(b"t/a/u/1"))
    letters.letter(_letter(b"t/a/u/2"))
    letters.letter(_letter(b"t/a/u/3"))  # pushes out the least recently lettered: 1
    assert len(letters) == 2
    assert "1 more dead letters session=t/a/u/1 stage=session-size" in _lines(caplog)[-1]


def test_a_pair_is_summarised_exactly_one_interval_after_its_first_letter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = _letter_log(caplog, clock, interval_s=10.0)
    log.letter(_letter(b"a/b/c/d", offset=0))
    clock.now += 5.0
    log.letter(_letter(b"a/b/c/d", offset=1))
    assert len(_lines(caplog)) == 1  # counted, not yet due
    clock.now += 5.0  # exactly one interval since the first line
    log.letter(_letter(b"a/b/c/d", offset=2))
    assert _lines(caplog)[1:] == [
        "2 more dead letters session=a/b/c/d stage=session-size in the last 10 s"
    ]
    clock.now += 10.0  # the count restarted at zero: nothing more came, nothing is said
    log.sweep()
    assert len(_lines(caplog)) == 2


def test_the_first_sweep_comes_one_interval_after_the_log_starts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = _letter_log(caplog, clock, interval_s=10.0)
    log.letter(_letter(b"k/a/u/s", offset=0))
    clock.now += 1.0
    log.letter(_letter(b"k/a/u/s", offset=1))  # counted
    clock.now += 8.0
    log.sweep()  # 9 s since the start: no sweep yet
    assert len(_lines(caplog)) == 1
    clock.now += 1.0
    log.sweep()
    assert _lines(caplog)[1:] == [
        "1 more dead letters session=k/a/u/s stage=session-size in the last 10 s"
    ]
    clock.now += 3.0
    log.letter(_letter(b"k/a/u/s", offset=2))
    clock.now += 3.0
    log.sweep()  # the next sweep is an interval after the last one, not before
    assert len(_lines(caplog)) == 2


def test_letters_without_a_key_or_with_undecodable_bytes_are_named_safely(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = _letter_log(caplog, clock, interval_s=10.0)
    for key in (None, b"\xff\xfe/bad"):
        log.letter(_letter(key, offset=0))
        log.letter(_letter(key, offset=1))
    clock.now += 10.0
    log.sweep()
    assert sorted(_lines(caplog)[2:]) == [
        "1 more dead letters session=- stage=session-size in the last 10 s",
        "1 more dead letters session=\ufffd\ufffd/bad stage=session-size in the last 10 s",
    ]


def test_an_empty_key_and_a_missing_key_are_one_pair(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = _letter_log(caplog, clock)
    log.letter(_letter(None, offset=0))
    log.letter(_letter(b"", offset=1))
    assert (len(log), len(_lines(caplog))) == (1, 1)


def test_the_least_recently_lettered_pair_leaves_first(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = _letter_log(caplog, clock, max_pairs=2)
    log.letter(_letter(b"t/a/u/first", offset=0))
    log.letter(_letter(b"t/a/u/second", offset=1))
    log.letter(_letter(b"t/a/u/first", offset=2))  # counted; now the most recent
    log.letter(_letter(b"t/a/u/third", offset=3))  # second leaves, with nothing counted
    log.letter(_letter(b"t/a/u/first", offset=4))  # still remembered: counted, not logged
    assert [line for line in _lines(caplog) if "offset=4" in line] == []
    assert len(log) == 2


def test_counts_are_due_one_interval_after_the_pairs_line_not_at_the_logs_sweeps(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()  # the log starts at 100: its first sweep is due at 110
    log = _letter_log(caplog, clock, interval_s=10.0)
    clock.now = 103.0
    log.letter(_letter(b"t/a/u/s", offset=0))  # the pair's line, at 103
    clock.now = 104.0
    log.letter(_letter(b"t/a/u/s", offset=1))  # counted
    clock.now = 110.0
    log.sweep()  # a sweep, but the pair's line is 7 s old
    assert len(_lines(caplog)) == 1
    clock.now = 112.9
    log.sweep()
    assert len(_lines(caplog)) == 1  # no sweep before 120, and none due
    clock.now = 113.0
    log.letter(_letter(b"t/a/u/s", offset=2))  # exactly 10 s after the pair's line
    assert _lines(caplog)[1:] == [
        "2 more dead letters session=t/a/u/s stage=session-size in the last 10 s"
    ]


def test_a_sweep_is_due_one_interval_after_the_last_sweep(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()  # the first sweep is due at 110
    log = _letter_log(caplog, clock, interval_s=10.0)
    clock.now = 105.0
    log.letter(_letter(b"t/a/u/s", offset=0))  # the pair's line, at 105
    clock.now = 106.0
    log.letter(_letter(b"t/a/u/s", offset=1))  # counted
    clock.now = 110.0
    log.sweep()  # the due sweep: the pair's line is 5 s old, nothing to say; next at 120
    clock.now = 115.0
    log.sweep()  # the pair is due now, but the next sweep is not
    assert len(_lines(caplog)) == 1
    clock.now = 120.0
    log.sweep()
    assert _lines(caplog)[1:] == [
        "1 more dead letters session=t/a/u/s stage=session-size in the last 15 s"
    ]
