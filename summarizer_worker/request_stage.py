"""The steps of handling one request, each one's failure kept to that request. Pure: no I/O.

Every step reads hostile input (a record, a log, an endpoint's reply), so
whatever a step raises is that request's failure, not the worker's:
:func:`at_stage` turns it into a :class:`RequestFailedError` naming the step,
and the worker dead-letters the request and goes on. Errors the retry loop
sorts itself, and the worker's own infrastructure errors, pass unchanged.

Example::

    with at_stage("check"):
        status = request_status(request, records, stable)   # RangeNotFoundError
    # -> RequestFailedError(stage="check", reason="range not found for ...")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from schemas.errors import CtxstreamError
from schemas.log_text import shown
from summarizer_worker.errors import (
    RangeNotStableError,
    RequestFailedError,
    RequestStage,
    SummarizerError,
)

#: Characters of an error's message kept in a reason (the dead letter cuts again).
REASON_CHARS: Final = 1_000

#: What the pipeline's retry loop sorts itself.
SORTED_BY_THE_LOOP: Final = (RangeNotStableError, SummarizerError, RequestFailedError)


def failure_reason(exc: BaseException) -> str:
    """`exc` as a one-line reason: our own errors by their message, others with their type.

    Never raises, whatever the exception's ``__str__`` does.

    Example: ``ValueError("bad")`` -> ``"ValueError: bad"``; a
    ``RangeNotFoundError`` -> its message.
    """
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not stop the reason
        message = ""
    text = shown(message, REASON_CHARS)
    if isinstance(exc, CtxstreamError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def at_stage(
    stage: RequestStage, *, passing: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Run the block as step `stage` of one request: what fails in it fails that request.

    Args:
        stage: The step's name, as the dead letter will say it.
        passing: Errors that are not the request's fault (the worker's own
            infrastructure); they leave the block unchanged.

    Raises:
        RequestFailedError: Any other ``Exception`` of the block, tagged with
            `stage` and its reason (the original is its ``__cause__``).
    """
    try:
        yield
    except SORTED_BY_THE_LOOP:
        raise
    except passing:
        raise
    except Exception as exc:
        raise RequestFailedError(stage=stage, reason=failure_reason(exc)) from exc
