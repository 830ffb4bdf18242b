"""The errors a summarizer backend raises, each saying whether a retry helps."""

from __future__ import annotations

from typing import ClassVar

from schemas.errors import CtxstreamError


class SummarizerError(CtxstreamError):
    """A summarizer could not produce a summary; the message says why.

    Attributes:
        status: The HTTP status of the last reply, None when there was none
            (a timeout, a refused connection).
        excerpt: The start of the last reply's body, at most a few hundred
            characters, with the API key blanked out should a server echo it.
        attempts: How many requests were sent.
    """

    def __init__(self, reason: str, *, status: int | None, excerpt: str, attempts: int) -> None:
        shown = f"HTTP {status}" if status is not None else "no reply"
        body = f": {excerpt}" if excerpt else ""
        super().__init__(f"summarizer {reason} ({shown}, {attempts} attempt(s)){body}")
        self.status, self.excerpt, self.attempts = status, excerpt, attempts


class SummarizerUnavailableError(SummarizerError):
    """The endpoint stayed overloaded, failing (5xx) or silent through every retry.

    Retriable: the same request may well succeed later, so a shell backs off
    and retries the compaction request rather than dropping it.
    """

    retriable: ClassVar[bool] = True

    def __init__(
        self,
        reason: str,
        *,
        status: int | None,
        excerpt: str,
        attempts: int,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(reason, status=status, excerpt=excerpt, attempts=attempts)
        self.retry_after_s = retry_after_s
        """The delay the endpoint asked for (``Retry-After`` seconds), if it did."""


class SummarizerRejectedError(SummarizerError):
    """The endpoint refused the request (4xx other than 429) or replied nonsense.

    Not retriable: the same request gets the same answer until the deployment
    changes (key, model name, endpoint).
    """
