"""How long a request waits before its next attempt. Pure: no I/O, no clock."""

from __future__ import annotations


def retry_delay_s(
    failures: int, *, base_s: float, max_s: float, asked_s: float | None = None
) -> float:
    """The wait after the `failures`-th failed attempt: doubling from `base_s`, at most `max_s`.

    A delay the failing service asked for (``Retry-After``) replaces the
    doubling, within the same bound.

    Example: base 1.0, max 60.0 -> 1.0, 2.0, 4.0, ... after failures 1, 2, 3;
    60.0 from failure 7 on; asked 5.0 -> 5.0.

    Raises:
        ValueError: `failures` is below 1.
    """
    if failures < 1:
        raise ValueError(f"failures={failures!r}: a delay follows a failure")
    delay = asked_s if asked_s is not None else base_s * 2 ** min(failures - 1, 62)
    return min(delay, max_s)
