"""A summarizer backed by any OpenAI-compatible chat-completions endpoint.

The prompt is ADK's default summarizer prompt over the rendered window
(reference §7.1-7.2): one user message, non-streaming. Overload (429), server
errors (5xx) and transport failures are retried with exponential backoff,
honouring a ``Retry-After`` of whole seconds; anything else fails at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Final, Self

import httpx
from pydantic import SecretStr

from projections.render import DEFAULT_PROMPT_TEMPLATE, build_prompt, render_transcript
from schemas.event import Event, UsageMetadata
from summarizer_worker.errors import (
    SummarizerRejectedError,
    SummarizerUnavailableError,
)
from summarizer_worker.summarizers import SummaryResult

logger = logging.getLogger(__name__)

#: Characters of a failed reply's body quoted in an error.
EXCERPT_CHARS: Final = 200
_REDACTED: Final = "<redacted>"

Sleep = Callable[[float], Awaitable[None]]


def _excerpt(body: str, secret: str) -> str:
    # A proxy may echo the request's headers back; the key never leaves here.
    if secret:
        body = body.replace(secret, _REDACTED)
    body = " ".join(body.split())
    return body if len(body) <= EXCERPT_CHARS else body[:EXCERPT_CHARS] + "..."


def _retry_after_s(response: httpx.Response) -> float | None:
    # Only the delay-seconds form: the HTTP-date form would need a clock.
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


class OpenAIChatSummarizer:
    """The `Summarizer` that asks a chat model, over HTTP.

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
        max_retries: int = 3,
        backoff_base_s: float = 1.0,
        max_backoff_s: float = 30.0,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """A summarizer posting to ``{base_url}/chat/completions``.

        Args:
            base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``.
            model: The model name sent with every request.
            api_key: Sent as ``Authorization: Bearer``; an empty key sends no
                header (local servers often need none).
            timeout_s: Bound on each attempt (connect, write, read, pool).
            max_retries: Retries after the first attempt, 0 for none.
            backoff_base_s: The first retry's delay; it doubles per retry.
            max_backoff_s: Bound on any delay, ``Retry-After`` included.
            prompt_template: ADK's prompt template, ``{conversation_history}``
                standing for the rendered window.
            client: An HTTP client to share; None makes one owned here.
            sleep: Waits between attempts (tests pass a recorder).

        Raises:
            ValueError: `max_retries` is negative.
        """
        if max_retries < 0:
            raise ValueError(f"max_retries={max_retries!r}: must be 0 or more")
        self._url = f"{base_url.rstrip('/')}/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout = httpx.Timeout(timeout_s)
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._backoff_base_s = backoff_base_s
        self._max_backoff_s = max_backoff_s
        self._template = prompt_template
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()
        self._sleep = sleep

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

    def _delay_s(self, retry: int, retry_after_s: float | None) -> float:
        # No jitter: one worker per partition retries one request at a time,
        # so there is no herd to spread, and tests can pin every delay.
        delay = retry_after_s if retry_after_s is not None else self._backoff_base_s * 2**retry
        return min(delay, self._max_backoff_s)

    def _headers(self) -> dict[str, str]:
        key = self._api_key.get_secret_value()
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        """The model's summary of `window`, with the usage it reports.

        None for an empty window (no request is sent) and when the model
        returns no content, as ADK appends no summary then (reference §7.3).

        Raises:
            SummarizerUnavailableError: 429, 5xx or no reply on every attempt.
            SummarizerRejectedError: Another status, or a reply that is not a
                chat completion.
        """
        if not window:
            return None
        prompt = build_prompt(render_transcript(window), self._template)
        payload = {
            "model": self._model,
            "messages": [{"role": "user", "content": prompt}],
            "stream": False,
        }
        response, attempts = await self._post(payload)
        text, usage = self._parse(response, attempts)
        logger.debug(
            "summarized events=%d chars=%d backend=openai model=%s",
            len(window),
            len(text or ""),
            self._model,
        )
        return SummaryResult(text=text, usage=usage) if text else None

    async def _post(self, payload: dict[str, Any]) -> tuple[httpx.Response, int]:
        attempts = self._max_retries + 1
        for attempt in range(1, attempts):
            try:
                return await self._attempt(payload, attempt), attempt
            except SummarizerUnavailableError as exc:
                delay_s = self._delay_s(attempt - 1, exc.retry_after_s)
                logger.warning(
                    "summarizer retry attempt=%d of=%d status=%s delay_s=%.3f url=%s",
                    attempt,
                    attempts,
                    exc.status,
                    delay_s,
                    self._url,
                )
                await self._sleep(delay_s)
        return await self._attempt(payload, attempts), attempts

    async def _attempt(self, payload: dict[str, Any], attempt: int) -> httpx.Response:
        """One POST: the 2xx reply, or the error that says whether to retry."""
        try:
            response = await self._client.post(
                self._url, json=payload, headers=self._headers(), timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            raise SummarizerUnavailableError(
                f"timed out after {self._timeout_s}s", status=None, excerpt="", attempts=attempt
            ) from exc
        except httpx.TransportError as exc:
            raise SummarizerUnavailableError(
                f"unreachable ({type(exc).__name__})", status=None, excerpt="", attempts=attempt
            ) from exc
        status = response.status_code
        if response.is_success:
            return response
        excerpt = _excerpt(response.text, self._api_key.get_secret_value())
        if status == httpx.codes.TOO_MANY_REQUESTS or status >= httpx.codes.INTERNAL_SERVER_ERROR:
            raise SummarizerUnavailableError(
                "endpoint unavailable",
                status=status,
                excerpt=excerpt,
                attempts=attempt,
                retry_after_s=_retry_after_s(response),
            )
        raise SummarizerRejectedError(
            "request rejected", status=status, excerpt=excerpt, attempts=attempt
        )

    def _parse(
        self, response: httpx.Response, attempts: int
    ) -> tuple[str | None, UsageMetadata | None]:
        try:
            body = response.json()
            content = _content(body)
        # JSONDecodeError is a ValueError; a wrong shape is one of the others.
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SummarizerRejectedError(
                f"reply is not a chat completion ({type(exc).__name__}: {exc})",
                status=response.status_code,
                excerpt=_excerpt(response.text, self._api_key.get_secret_value()),
                attempts=attempts,
            ) from exc
        usage = _usage(body)
        # A blank completion says nothing; ADK would append no summary either.
        return (content if content and content.strip() else None), usage
