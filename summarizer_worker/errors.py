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


class RangeNotFoundError(CtxstreamError):
    """The events a compaction request names are not where it says they are.

    Not retriable: an offset below the last stable offset that holds no event
    of the session, or another event than the request names, stays so. The
    request goes to `dead-letters` with this reason.
    """

    def __init__(self, *, request_id: str, problem: str) -> None:
        super().__init__(f"range not found for request {request_id}: {problem}")
        self.request_id, self.problem = request_id, problem


class RangeNotStableError(CtxstreamError):
    """A requested offset is not readable yet: a transaction on `events` is still open.

    Retriable: the broker commits or aborts every transaction within its
    timeout, after which the offset is either readable or gone for good.
    """

    retriable: ClassVar[bool] = True

    def __init__(self, *, request_id: str, end_offset: int, stable_offset: int) -> None:
        super().__init__(
            f"request {request_id} reads up to offset {end_offset}, "
            f"but the last stable offset of its partition is {stable_offset}"
        )
        self.request_id, self.end_offset, self.stable_offset = (
            request_id,
            end_offset,
            stable_offset,
        )
