"""A summarizer backed by any OpenAI-compatible chat-completions endpoint.

The prompt is ADK's default summarizer prompt over the rendered window
(reference §7.1-7.2): one user message, non-streaming. Each call is one HTTP
attempt, bounded both ways (review M6): the prompt is cut to
``max_prompt_chars`` (:mod:`summarizer_worker.prompt_transcript`), the
payload asks for at most ``max_tokens``, the reply is read with a byte limit
and the whole exchange with a deadline. Overload (429), server errors (5xx),
timeouts and transport failures are `SummarizerUnavailableError` (with the
``Retry-After`` seconds the endpoint asked for); the worker's pipeline is the
one retry loop around a call. Anything else is `SummarizerRejectedError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Final, Self

import httpx
import orjson
from pydantic import SecretStr

from projections.compaction.render import DEFAULT_PROMPT_TEMPLATE, build_prompt
from schemas.event import Event, UsageMetadata
from schemas.numbers import MAX_TOKEN_COUNT
from summarizer_worker.endpoint import endpoint_problem, shown_endpoint
from summarizer_worker.errors import (
    SummarizerRejectedError,
    SummarizerUnavailableError,
)
from summarizer_worker.prompt_transcript import MIN_TRANSCRIPT_CHARS, prompt_transcript
from summarizer_worker.summarizers import SummaryResult

logger = logging.getLogger(__name__)

#: Characters of a failed reply's body quoted in an error.
EXCERPT_CHARS: Final = 200
_REDACTED: Final = "<redacted>"


def _excerpt(body: bytes, secret: str) -> str:
    text = body.decode("utf-8", errors="replace")
    # A proxy may echo the request's headers back; the key never leaves here.
    if secret:
        text = text.replace(secret, _REDACTED)
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def retry_after_s(response: httpx.Response) -> float | None:
    """The ``Retry-After`` delay in seconds, None when absent or not plain digits.

    Only the delay-seconds form (the HTTP-date form would need a clock), and
    only ASCII digits: httpx decodes header bytes as latin-1, so the byte
    0xB2 arrives as ``"²"``, which ``isdigit`` accepts and ``float`` refuses
    (review L2).
    """
    value = response.headers.get("retry-after", "").strip()
    if not (value.isascii() and value.isdigit()):
        return None
    try:
        return float(value)
    except ValueError:  # unreachable for ASCII digits; a header must never raise
        return None


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if 0 <= value <= MAX_TOKEN_COUNT else None  # what an event can hold


def _usage(body: dict[str, Any]) -> UsageMetadata | None:
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if prompt is None and completion is None:
        return None
    return UsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=completion,
        total_token_count=_count(usage, "total_tokens"),
    )


def _content(body: Any) -> str | None:
    """``choices[0].message.content``; raises KeyError/TypeError/IndexError if absent."""
    content = body["choices"][0]["message"]["content"]
    if content is not None and not isinstance(content, str):
        raise TypeError(f"content is {type(content).__name__}")
    return content


class _ReplyTooLargeError(Exception):
    """The reply's body went over the byte limit (internal: becomes a rejection)."""


async def _read_bounded(response: httpx.Response, limit: int) -> bytes:
    """The reply's body, read chunk by chunk and never more than `limit` bytes of it.

    Raises:
        _ReplyTooLargeError: The body is longer than `limit`.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        if len(body) + len(chunk) > limit:
            raise _ReplyTooLargeError
        body.extend(chunk)
    return bytes(body)


class OpenAIChatSummarizer:
    """The `Summarizer` that asks a chat model, over HTTP, once per call.

    Use as ``async with OpenAIChatSummarizer(...) as summarizer:`` or call
    `aclose`; a client passed in stays open, its owner closes it.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr,
        timeout_s: float = 60.0,
        max_tokens: int = 2_048,
        max_reply_bytes: int = 262_144,
        max_prompt_chars: int = 100_000,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        """A summarizer posting to ``{base_url}/chat/completions``.

        Args:
            base_url: The API root, e.g. ``https://api.example.com/v1``;
                ``http`` only to a loopback host.
            model: The model name sent with every request.
            api_key: Sent as ``Authorization: Bearer``; an empty key sends no
                header (local servers often need none).
            timeout_s: Bound on one call, from connecting to the reply's last
                byte.
            max_tokens: The most tokens the model may write (``max_tokens``).
            max_reply_bytes: The most bytes of a reply's body read; a longer
                reply is rejected.
            max_prompt_chars: The most characters of the prompt; the window's
                history is cut to fit.
            prompt_template: ADK's prompt template, ``{conversation_history}``
                standing for the rendered window.
            client: An HTTP client to share; None makes one owned here (which
                ignores proxy variables of the environment).

        Raises:
            ValueError: The URL is not one to send a key to, or a bound
                leaves no room (see :mod:`summarizer_worker.endpoint`).
        """
        if (problem := endpoint_problem(base_url)) is not None:
            raise ValueError(f"base_url {shown_endpoint(base_url)!r}: {problem}")
        if max_tokens < 1 or max_reply_bytes < 1:
            raise ValueError(f"max_tokens={max_tokens!r}, max_reply_bytes={max_reply_bytes!r}")
        self._transcript_chars = max_prompt_chars - len(build_prompt("", prompt_template))
        if self._transcript_chars < MIN_TRANSCRIPT_CHARS:
            raise ValueError(
                f"max_prompt_chars={max_prompt_chars!r} leaves {self._transcript_chars} "
                f"characters for the history, below {MIN_TRANSCRIPT_CHARS}"
            )
        self._url = f"{base_url.rstrip('/')}/chat/completions"
        self._shown_url = shown_endpoint(self._url)
        self._model = model
        self._api_key = api_key
        self._timeout = httpx.Timeout(timeout_s)
        self._timeout_s = timeout_s
        self._max_tokens = max_tokens
        self._max_reply_bytes = max_reply_bytes
        self._template = prompt_template
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(trust_env=False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this summarizer made it."""
        if self._owns_client:
            await self._client.aclose()

    def _headers(self) -> dict[str, str]:
        # Identity: the byte limit counts the body as sent, with no inflation.
        headers = {"Accept-Encoding": "identity"}
        key = self._api_key.get_secret_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        """The model's summary of `window`, with the usage it reports; one attempt.

        None for an empty window (no request is sent) and when the model
        returns no content, as ADK appends no summary then (reference §7.3).

        Raises:
            SummarizerUnavailableError: 429, 5xx, a timeout or no reply.
            SummarizerRejectedError: Another status, a reply over the byte
                limit, or a reply that is not a chat completion.
        """
        if not window:
            return None
        transcript = prompt_transcript(window, self._transcript_chars)
        if transcript.left_out:
            logger.info(
                "prompt cut events=%d left_out=%d chars=%d",
                len(window),
                transcript.left_out,
                len(transcript.text),
            )
        payload = {
            "model": self._model,
            "messages": [
                {"role": "user", "content": build_prompt(transcript.text, self._template)}
            ],
            "stream": False,
            "max_tokens": self._max_tokens,
        }
        status, body = await self._post(payload)
        text, usage = self._parse(status, body)
        logger.debug(
            "summarized events=%d chars=%d backend=openai model=%s url=%s",
            len(window),
            len(text or ""),
            self._model,
            self._shown_url,
        )
        return SummaryResult(text=text, usage=usage) if text else None

    async def _post(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        """One POST: the 2xx reply's status and body, or the error that says whether to retry."""
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._exchange(payload)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise SummarizerUnavailableError(
                f"timed out after {self._timeout_s}s", status=None, excerpt=""
            ) from exc
        except httpx.TransportError as exc:
            raise SummarizerUnavailableError(
                f"unreachable ({type(exc).__name__})", status=None, excerpt=""
            ) from exc

    async def _exchange(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        secret = self._api_key.get_secret_value()
        async with self._client.stream(
            "POST", self._url, json=payload, headers=self._headers(), timeout=self._timeout
        ) as response:
            status = response.status_code
            try:
                body = await _read_bounded(response, self._max_reply_bytes)
            except _ReplyTooLargeError:
                raise SummarizerRejectedError(
                    f"reply over {self._max_reply_bytes} bytes", status=status, excerpt=""
                ) from None
            if response.is_success:
                return status, body
            excerpt = _excerpt(body, secret)
            if (
                status == httpx.codes.TOO_MANY_REQUESTS
                or status >= httpx.codes.INTERNAL_SERVER_ERROR
            ):
                raise SummarizerUnavailableError(
                    "endpoint unavailable",
                    status=status,
                    excerpt=excerpt,
                    retry_after_s=retry_after_s(response),
                )
            raise SummarizerRejectedError("request rejected", status=status, excerpt=excerpt)

    def _parse(self, status: int, body: bytes) -> tuple[str | None, UsageMetadata | None]:
        try:
            data = orjson.loads(body)
            content = _content(data)
        # JSONDecodeError is a ValueError; a wrong shape is one of the others.
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SummarizerRejectedError(
                f"reply is not a chat completion ({type(exc).__name__}: {exc})",
                status=status,
                excerpt=_excerpt(body, self._api_key.get_secret_value()),
            ) from exc
        usage = _usage(data)
        # A blank completion says nothing; ADK would append no summary either.
        return (content if content and content.strip() else None), usage
