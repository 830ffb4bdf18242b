"""The demo rejects sessions or invocations below 1 before it touches the broker."""

from __future__ import annotations

import pytest

from ctxstream.bench.demo import run_demo
from ctxstream.cli.main import main
from schemas.kafka.settings import KafkaSettings


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["demo", "--sessions", "0"], "argument --sessions: 0 is below 1"),
        (["demo", "--invocations", "x"], "argument --invocations: 'x' is not a whole number"),
    ],
)
def test_the_command_line_names_the_bad_argument(
    argv: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert reason in capsys.readouterr().err


async def test_run_demo_refuses_an_empty_workload() -> None:
    # An unreachable broker: the refusal must come before any connection.
    settings = KafkaSettings(kafka_bootstrap="127.0.0.1:1")
    with pytest.raises(ValueError, match="at least 1 of each"):
        await run_demo(settings, sessions=2, invocations=0)
