"""What the commands share: one-line failures, quiet loggers, argument types, the hook type.

Every command module registers its commands with a hook taking the parent's
:data:`Subcommands` (``add_tail_command(commands)``, a benchmark's
``add_parser(bench_commands)``); :mod:`ctxstream.cli.main` calls them in order.
It imports none of them, so no command module imports another's entry point.

Example: ``fail("tail", "no such topic")`` writes ``ctxstream tail: no such topic``
and returns 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Coroutine, Mapping
from typing import Any, Final, TypeAlias

from aiokafka.errors import KafkaError
from pydantic import ValidationError

from ctxstream.errors import InvalidArgumentError
from schemas.errors import CtxstreamError
from schemas.log_text import shown

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The subcommands of a parser, as ``add_subparsers`` returns them."""

#: Loggers whose lines would surround a command's one line of error (:func:`run_command`).
QUIET_LOGGERS: Final = {
    "aiokafka": logging.CRITICAL,
    "ctxstream": logging.ERROR,
    "streams": logging.ERROR,
    "schemas": logging.ERROR,
}


def fail(command: str, message: str, *, status: int = 1) -> int:
    """Say what went wrong in one line on stderr (``ctxstream COMMAND: ...``); `status`."""
    sys.stderr.write(f"ctxstream {command}: {shown(message, 1_000)}\n")
    return status


def quiet_loggers(levels: Mapping[str, int], *, at_least_root: bool = True) -> None:
    """Set each named logger to its level in `levels` (with `at_least_root`: or the root's).

    A command whose output is its own (``tail``, ``context``, ``up``) keeps
    library lines (aiokafka's retries, a subscription's start) out of it.
    """
    floor = logging.getLogger().level if at_least_root else logging.NOTSET
    for name, level in levels.items():
        logging.getLogger(name).setLevel(max(level, floor))


def run_command(command: str, run: Coroutine[Any, Any, None]) -> int:
    """Run `run`; its exit status, every failure said in one line on stderr.

    2 for an argument the client refuses, 1 for anything the deployment answers
    or a broker it cannot reach, 130 after Ctrl-C, 0 when the reader of the
    output went away (``| head``).
    """
    quiet_loggers(QUIET_LOGGERS, at_least_root=False)
    try:
        asyncio.run(run)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, with nothing left to flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (InvalidArgumentError, ValidationError) as exc:
        return fail(command, str(exc), status=2)
    except (CtxstreamError, KafkaError, OSError) as exc:
        return fail(command, str(exc) or type(exc).__name__)
    return 0


def positive(text: str) -> int:
    """An argument that must be a whole number of at least 1."""
    return _whole(text, least=1)


def non_negative(text: str) -> int:
    """An argument that must be a whole number of at least 0."""
    return _whole(text, least=0)


def _whole(text: str, *, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} is below {least}")
    return value
