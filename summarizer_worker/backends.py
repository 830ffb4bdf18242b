"""The summarizer backend the settings choose, built and (for HTTP) closed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import assert_never

import httpx

from summarizer_worker.extractive import ExtractiveSummarizer
from summarizer_worker.openai_chat import OpenAIChatSummarizer
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.summarizers import Summarizer


def make_summarizer(
    settings: SummarizerSettings, *, client: httpx.AsyncClient | None = None
) -> Summarizer:
    """The configured backend.

    Args:
        settings: The process's settings.
        client: The HTTP client an HTTP backend uses. Without one, an OpenAI
            backend makes its own, and whoever calls this closes it
            (``aclose``); `open_summarizer` does both.
    """
    match settings.summarizer:
        case "extractive":
            return ExtractiveSummarizer(max_chars=settings.extractive_max_chars)
        case "openai":
            return OpenAIChatSummarizer(
                base_url=settings.openai_base_url,
                model=settings.openai_model,
                api_key=settings.openai_api_key,
                timeout_s=settings.openai_timeout_s,
                max_tokens=settings.openai_max_tokens,
                max_reply_bytes=settings.openai_max_reply_bytes,
                max_prompt_chars=settings.summarizer_max_prompt_chars,
                client=client,
            )
        case _:
            assert_never(settings.summarizer)


@asynccontextmanager
async def open_summarizer(settings: SummarizerSettings) -> AsyncIterator[Summarizer]:
    """The configured backend for the life of the block, its HTTP client closed after."""
    if settings.summarizer == "extractive":
        yield make_summarizer(settings)
        return
    # Proxy variables of the environment are not followed: the API key goes
    # to the configured endpoint only (review L1).
    async with httpx.AsyncClient(trust_env=False) as client:
        yield make_summarizer(settings, client=client)
