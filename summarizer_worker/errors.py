"""The errors of the summarizer worker, each saying whether a retry helps."""

from __future__ import annotations

from typing import ClassVar, Literal

from schemas.errors import CtxstreamError

#: Where handling one compaction request failed for good, as its dead letter says:
#:
#: * ``decode``: the record is not a compaction request;
#: * ``validate``: it decodes, but no valid answer can name it (its tenant does
#:   not own its session, its id cannot key an envelope, a negative offset, a
#:   timestamp that is not finite);
#: * ``read``: its range cannot be read (below the log start, never stable,
#:   the session's slice over its byte bound);
#: * ``check``: the log does not hold the events it names;
#: * ``summarize``: the summarizer refused, failed through every retry or
#:   returned no summary;
#: * ``envelope``: the summary event cannot be built or cannot fit the topic;
#: * ``handle``: the worker's own bookkeeping around those steps failed (a bug,
#:   kept to this one request).
RequestStage = Literal["decode", "validate", "read", "check", "summarize", "envelope", "handle"]


class SummarizerError(CtxstreamError):
    """A summarizer could not produce a summary in one call; the message says why.

    A backend makes exactly one attempt per call: the worker's pipeline is the
    one retry loop (``summarizer_retry_attempts``).

    Attributes:
        status: The HTTP status of the reply, None when there was none (a
            timeout, a refused connection).
        excerpt: The start of the reply's body, at most a few hundred
            characters, with the API key blanked out should a server echo it.
    """

    def __init__(self, reason: str, *, status: int | None, excerpt: str) -> None:
        shown = f"HTTP {status}" if status is not None else "no reply"
        body = f": {excerpt}" if excerpt else ""
        super().__init__(f"summarizer {reason} ({shown}){body}")
        self.status, self.excerpt = status, excerpt


class SummarizerUnavailableError(SummarizerError):
    """The endpoint was overloaded (429), failing (5xx) or silent.

    Retriable: the same request may well succeed later, so a shell backs off
    (as long as ``retry_after_s`` asks, within its bound) and tries again.
    """

    retriable: ClassVar[bool] = True

    def __init__(
        self,
        reason: str,
        *,
        status: int | None,
        excerpt: str,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(reason, status=status, excerpt=excerpt)
        self.retry_after_s = retry_after_s
        """The delay the endpoint asked for (``Retry-After`` seconds), if it did."""


class SummarizerRejectedError(SummarizerError):
    """The endpoint refused the request (4xx other than 429) or replied nonsense.

    Nonsense includes a reply over the byte limit. Not retriable: the same
    request gets the same answer until the deployment changes (key, model
    name, endpoint).
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


class SliceTooLargeError(CtxstreamError):
    """A session's records from a request's first offset on exceed the slice's byte bound.

    Not retriable: the records stay in the log, so a second read finds at
    least as many. The request is dead-lettered and refused, and the projector
    decides the session again over a newer window.
    """

    def __init__(self, *, partition: int, start_offset: int, limit_bytes: int) -> None:
        super().__init__(
            f"the session's records of partition {partition} from offset {start_offset} "
            f"exceed {limit_bytes} bytes"
        )
        self.partition, self.start_offset, self.limit_bytes = partition, start_offset, limit_bytes


class RequestFailedError(CtxstreamError):
    """Handling one compaction request failed for good at `stage`.

    Not retriable. The worker writes a dead letter with the stage and the
    reason, plus a refusal on `events` when the request names its session
    legitimately, commits the request's offset and goes on with the next.

    Attributes:
        stage: Where it failed.
        reason: Why, as the dead letter says it (cut and escaped there).
    """

    def __init__(self, *, stage: RequestStage, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason = stage, reason
